// Mirrors ATen/native/cuda/ReduceSumProdKernel.cu and ReduceMaxValuesKernel.cu registration:
// sum, mean and amax on CUDA with ops/reduction.cpp's meta functions. Any set of reduced dims
// becomes one [outer, reduced, inner] view for kernels/cuda/reduce.h (a permuted copy when the
// reduced dims are not adjacent).
#include <limits>

#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/reduce.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Tensor reduce_cuda(const char* op, kc::ReduceOp rop, const Tensor& self, const std::optional<Shape>& dims,
                   bool keepdim, bool mean) {
  TensorMeta m = reduce_meta(op, self, dims, keepdim, mean);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  if (self.numel() == 0) {  // the sum of no elements is 0; their mean is 0/0 = NaN (as on CPU)
    fill_cuda(out, mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    return out;
  }
  const std::vector<bool> mask = reduced_mask(op, self, dims);
  Tensor in = contiguous_cuda(cast_cuda(self, m.dtype));

  // [outer, reduced, inner], or a copy with the reduced dims last (cuda_temporaries.h: the rule a
  // Meta dry run imitating CUDA follows too).
  const cuda_temporaries::ReduceLayout layout = cuda_temporaries::reduce_layout(self, mask, out.numel());
  const int64_t outer = layout.outer, red_n = layout.red_n, inner = layout.inner;
  const double scale = mean ? 1.0 / static_cast<double>(red_n) : 1.0;
  if (layout.permuted_copy) {
    Shape sizes, strides;
    for (const std::vector<int64_t>* group : {&layout.kept, &layout.reduced}) {
      for (int64_t d : *group) {
        sizes.push_back(in.sizes()[d]);
        strides.push_back(in.strides()[d]);
      }
    }
    in = contiguous_cuda(make_alias(in, sizes, strides, in.storage_offset()));
  }
  const size_t ws_bytes = kc::reduce_workspace_bytes(m.dtype, outer, red_n, inner);
  Tensor ws = ws_bytes > 0 ? cuda_workspace(ws_bytes, m.device) : Tensor();
  kc::reduce(rop, m.dtype, in.data_ptr(), out.data_ptr(), outer, red_n, inner, scale,
             ws.defined() ? ws.data_ptr() : nullptr, cuda_stream(m.device));
  return out;
}

Tensor sum_cuda(const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_cuda("aten::sum", kc::ReduceOp::Sum, self, dims, keepdim, false);
}
Tensor mean_cuda(const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_cuda("aten::mean", kc::ReduceOp::Sum, self, dims, keepdim, true);
}
Tensor amax_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  check_amax_nonempty(self, dim);
  return reduce_cuda("aten::amax", kc::ReduceOp::Max, self, Shape{dim}, keepdim, false);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("sum", REMAT_FN(sum_cuda));
  m.impl("mean", REMAT_FN(mean_cuda));
  m.impl("amax", REMAT_FN(amax_cuda));
}

}  // namespace remat::ops
