// Mirrors ATen/native/cuda/Blas.cpp (addmm_out_cuda_impl, baddbmm_out_cuda_impl): mm, bmm and
// addmm on CUDA through cuBLAS (kernels/cuda/blas.h), with ops/linalg.cpp's meta functions and
// GEMM operand layouts (a strided operand is passed as is when cuBLAS can read it, else as a
// contiguous copy).
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/blas.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// out[i] (+)= a[i] @ b[i] for each batch entry; out is contiguous.
void batched_gemm_cuda(const Tensor& out, Tensor a, Tensor b, bool accumulate) {
  const int64_t batch = out.dim() == 3 ? out.sizes()[0] : 1;
  const int64_t m = out.sizes()[out.dim() - 2], n = out.sizes()[out.dim() - 1];
  const int64_t k = a.sizes()[a.dim() - 1];
  if (k == 0) {  // an empty sum: the product is zero
    if (!accumulate) fill_cuda(out, 0.0);
    return;
  }
  auto stride = [](const Tensor& t, int64_t from_end) { return t.strides()[t.dim() - from_end]; };
  // The copy is made before its strides are read (argument evaluation order is unspecified).
  GemmOperand ga = gemm_operand(a, stride(a, 2), stride(a, 1), m, k);
  if (!ga.t.defined()) {
    a = contiguous_cuda(a);  // neither row- nor column-major (e.g. expanded): copy
    ga = gemm_operand(a, stride(a, 2), stride(a, 1), m, k);
  }
  GemmOperand gb = gemm_operand(b, stride(b, 2), stride(b, 1), k, n);
  if (!gb.t.defined()) {
    b = contiguous_cuda(b);
    gb = gemm_operand(b, stride(b, 2), stride(b, 1), k, n);
  }
  REMAT_INTERNAL_ASSERT(ga.t.defined() && gb.t.defined());
  const int64_t sa = a.dim() == 3 ? a.strides()[0] : 0, sb = b.dim() == 3 ? b.strides()[0] : 0;
  kc::gemm_strided_batched(out.dtype(), ga.trans, gb.trans, m, n, k, 1.0, a.data_ptr(), ga.ld, sa, b.data_ptr(), gb.ld,
                           sb, accumulate ? 1.0 : 0.0, out.data_ptr(), n, m * n, batch, cuda_stream(out.device()));
}

Tensor mm_cuda(const Tensor& a, const Tensor& b) {
  TensorMeta m = mm_meta(a, b);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() > 0) batched_gemm_cuda(out, a, b, false);
  return out;
}

Tensor bmm_cuda(const Tensor& a, const Tensor& b) {
  TensorMeta m = bmm_meta(a, b);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() > 0) batched_gemm_cuda(out, a, b, false);
  return out;
}

Tensor addmm_cuda(const Tensor& bias, const Tensor& a, const Tensor& b) {
  TensorMeta m = addmm_meta(bias, a, b);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  copy_into_cuda(out, bias);
  if (out.numel() > 0) batched_gemm_cuda(out, a, b, true);
  return out;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("mm", REMAT_FN(mm_cuda));
  m.impl("bmm", REMAT_FN(bmm_cuda));
  m.impl("addmm", REMAT_FN(addmm_cuda));
}

}  // namespace remat::ops
