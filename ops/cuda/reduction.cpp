// Mirrors ATen/native/cuda/ReduceSumProdKernel.cu and ReduceMaxValuesKernel.cu registration:
// sum, mean and amax on CUDA, registered from their Defs (ops/reduction_defs.h,
// ops/structured.h). Any set of reduced dims becomes one [outer, reduced, inner] view for
// kernels/cuda/reduce.h (a permuted copy when the reduced dims are not adjacent): the template
// cuda_temporaries::reduce_input, which the Meta kernel imitating CUDA runs too.
#include <limits>

#include "engine/dispatch/library.h"
#include "kernels/cuda/reduce.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"
#include "ops/reduction_defs.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// The kernel (TORCH_IMPL_FUNC): out has the meta function's geometry and is not empty; dims as
// sum's (None, a list) or as amax's (one dim).
template <kc::ReduceOp kOp, bool kMean, class Dims>
void reduce_cuda(const char* op, const Tensor& out, const Tensor& self, Dims dims, bool) {
  const std::vector<bool> mask = reduced_mask(op, self, reduced_dims(dims));
  const cuda_temporaries::ReduceInput r = cuda_temporaries::reduce_input<CUDACopies>(self, mask, out.dtype(), out);
  if (!r.in.defined()) {  // the sum of no elements is 0; their mean is 0/0 = NaN (as on CPU)
    fill_cuda(out, kMean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    return;
  }
  const cuda_temporaries::ReduceLayout& l = r.layout;
  const double scale = kMean ? 1.0 / static_cast<double>(l.red_n) : 1.0;
  kc::reduce(kOp, out.dtype(), r.in.data_ptr(), out.data_ptr(), l.outer, l.red_n, l.inner, scale,
             r.workspace.defined() ? r.workspace.data_ptr() : nullptr, cuda_stream(out.device()));
}

using OptionalDims = const std::optional<Shape>&;

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
  impl<structured_sum, CUDABackend, &reduce_cuda<kc::ReduceOp::Sum, false, OptionalDims>>(m);
  impl<structured_mean, CUDABackend, &reduce_cuda<kc::ReduceOp::Sum, true, OptionalDims>>(m);
  impl<structured_amax, CUDABackend, &reduce_cuda<kc::ReduceOp::Max, false, int64_t>>(m);
}

}  // namespace remat::ops
