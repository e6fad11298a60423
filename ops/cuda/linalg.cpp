// Mirrors ATen/native/cuda/Blas.cpp (addmm_out_cuda_impl, baddbmm_out_cuda_impl): mm, bmm and
// addmm on CUDA through cuBLAS (kernels/cuda/blas.h), with ops/linalg.cpp's meta functions and
// GEMM operand layouts (a strided operand is passed as is when cuBLAS can read it, else as a
// contiguous copy).
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/blas.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// out[i] (+)= a[i] @ b[i] for each batch entry (one batch dim, or several that collapse into one
// stride; an operand whose batch dims do not is copied); out is contiguous.
void batched_gemm_cuda(const Tensor& out, Tensor a, Tensor b, bool accumulate) {
  int64_t batch = 1;
  for (int64_t d = 0; d + 2 < out.dim(); ++d) batch *= out.sizes()[d];
  const int64_t m = out.sizes()[out.dim() - 2], n = out.sizes()[out.dim() - 1];
  const int64_t k = a.sizes()[a.dim() - 1];
  if (k == 0) {  // an empty sum: the product is zero
    if (!accumulate) fill_cuda(out, 0.0);
    return;
  }
  // The copies (cuda_temporaries.h: the rule a Meta dry run imitating CUDA follows too).
  const cuda_temporaries::GemmCopies copies = cuda_temporaries::gemm_copies(out, a, b);
  if (copies.a_layout) a = contiguous_cuda(a);  // neither row- nor column-major (e.g. expanded)
  if (copies.b_layout) b = contiguous_cuda(b);
  if (copies.a_batch) a = contiguous_cuda(a);  // batch dims that no one stride steps through
  if (copies.b_batch) b = contiguous_cuda(b);
  auto stride = [](const Tensor& t, int64_t from_end) { return t.strides()[t.dim() - from_end]; };
  const GemmOperand ga = gemm_operand(a, stride(a, 2), stride(a, 1), m, k);
  const GemmOperand gb = gemm_operand(b, stride(b, 2), stride(b, 1), k, n);
  REMAT_INTERNAL_ASSERT(ga.t.defined() && gb.t.defined());
  using cuda_temporaries::collapsed_batch_stride;
  const int64_t sa = a.dim() > 2 ? collapsed_batch_stride(a, m * k) : 0;
  const int64_t sb = b.dim() > 2 ? collapsed_batch_stride(b, k * n) : 0;
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
