// Mirrors ATen/native/cuda/Blas.cpp (addmm_out_cuda_impl, baddbmm_out_cuda_impl): mm, bmm and
// addmm on CUDA through cuBLAS (kernels/cuda/blas.h): their CUDA kernels, registered from their
// Defs (ops/linalg_defs.h, ops/structured.h). A strided operand is passed as is when cuBLAS can
// read it, else as the contiguous copy ops/gemm_copies.h's CUDA plan declares (the Meta kernel
// reads the same plan).
#include "engine/dispatch/library.h"
#include "kernels/cuda/blas.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/cuda_temporaries.h"
#include "ops/gemm_copies.h"
#include "ops/linalg_defs.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// out[i] (+)= a[i] @ b[i] for each batch entry (one batch dim, or several that collapse into one
// stride; an operand whose batch dims do not is copied); out is contiguous.
void batched_gemm_cuda(const Tensor& out, const Tensor& a_in, const Tensor& b_in, bool accumulate) {
  int64_t batch = 1;
  for (int64_t d = 0; d + 2 < out.dim(); ++d) batch *= out.sizes()[d];
  const int64_t m = out.sizes()[out.dim() - 2], n = out.sizes()[out.dim() - 1];
  const int64_t k = a_in.sizes()[a_in.dim() - 1];
  if (k == 0) {  // an empty sum: the product is zero
    if (!accumulate) fill_cuda(out, 0.0);
    return;
  }
  // The copies (gemm_copies.h: the plan the Meta kernel imitating CUDA makes them by too).
  const GemmOperands g =
      make_gemm_copies(cuda_gemm_copies(out, a_in, b_in), a_in, b_in, [](const Tensor& t) { return contiguous_cuda(t); });
  const Tensor &a = g.a, &b = g.b;
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

// The kernels (TORCH_IMPL_FUNC): out has the meta function's geometry and is not empty.
void mm_cuda(const char*, const Tensor& out, const Tensor& a, const Tensor& b) { batched_gemm_cuda(out, a, b, false); }

void addmm_cuda(const char*, const Tensor& out, const Tensor& bias, const Tensor& a, const Tensor& b) {
  copy_into_cuda(out, bias);
  batched_gemm_cuda(out, a, b, true);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
  impl<structured_mm, CUDABackend, &mm_cuda>(m);
  impl<structured_bmm, CUDABackend, &mm_cuda>(m);
  impl<structured_addmm, CUDABackend, &addmm_cuda>(m);
}

}  // namespace remat::ops
