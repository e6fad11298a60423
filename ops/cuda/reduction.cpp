// Mirrors ATen/native/cuda/ReduceSumProdKernel.cu and ReduceMaxValuesKernel.cu registration:
// sum, mean and amax on CUDA with ops/reduction.cpp's meta functions. Any set of reduced dims
// becomes one [outer, reduced, inner] view for kernels/cuda/reduce.h (a permuted copy when the
// reduced dims are not adjacent).
#include <limits>

#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/reduce.h"
#include "ops/cuda/cuda_utils.h"
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

  // Dims of size 1 do not matter; the others are kept (K) or reduced (R), in order.
  std::vector<int64_t> kept, reduced;
  std::vector<char> kinds;  // 'K' / 'R' over non-size-1 dims
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) continue;
    (mask[d] ? reduced : kept).push_back(d);
    kinds.push_back(mask[d] ? 'R' : 'K');
  }
  int64_t red_n = 1;
  for (int64_t d : reduced) red_n *= self.sizes()[d];
  const double scale = mean ? 1.0 / static_cast<double>(red_n) : 1.0;

  // One run of reduced dims: [before, run, after] of the contiguous input.
  int64_t outer = 1, inner = 1;
  size_t first_r = kinds.size(), last_r = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == 'R') {
      first_r = std::min(first_r, i);
      last_r = i;
    }
  }
  bool one_run = true;
  for (size_t i = first_r; i < kinds.size() && i <= last_r; ++i) one_run = one_run && kinds[i] == 'R';
  if (!one_run) {
    // Move the reduced dims last (a permuted copy), keeping both groups in order.
    Shape sizes, strides;
    for (int64_t d : kept) {
      sizes.push_back(in.sizes()[d]);
      strides.push_back(in.strides()[d]);
    }
    for (int64_t d : reduced) {
      sizes.push_back(in.sizes()[d]);
      strides.push_back(in.strides()[d]);
    }
    in = contiguous_cuda(make_alias(in, sizes, strides, in.storage_offset()));
    outer = out.numel();
  } else {
    size_t pos = 0;
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (self.sizes()[d] == 1) continue;
      if (pos < first_r) outer *= self.sizes()[d];
      else if (pos > last_r) inner *= self.sizes()[d];
      ++pos;
    }
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
