// The GEMM operand copies of each backend (see gemm_copies.h; no PyTorch counterpart).
#include "ops/gemm_copies.h"

#include "ops/cuda_temporaries.h"
#include "ops/meta.h"

namespace remat::ops {

namespace {

// No GEMM runs (and nothing is copied) for an empty output or an empty sum.
bool no_gemm(const Tensor& out, const Tensor& a) { return out.numel() == 0 || a.sizes()[a.dim() - 1] == 0; }

}  // namespace

GemmCopyPlan cpu_gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b) {
  GemmCopyPlan plan;
  if (no_gemm(out, a)) return plan;
  const int64_t m = out.sizes()[out.dim() - 2], n = out.sizes()[out.dim() - 1], k = a.sizes()[a.dim() - 1];
  auto stride = [](const Tensor& t, int64_t from_end) { return t.strides()[t.dim() - from_end]; };
  if (!gemm_operand(a, stride(a, 2), stride(a, 1), m, k).t.defined()) plan.add(GemmCopyPlan::kA);
  if (!gemm_operand(b, stride(b, 2), stride(b, 1), k, n).t.defined()) plan.add(GemmCopyPlan::kB);
  return plan;
}

GemmCopyPlan cuda_gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b) {
  GemmCopyPlan plan;
  if (no_gemm(out, a)) return plan;
  const cuda_temporaries::GemmCopies c = cuda_temporaries::gemm_copies(out, a, b);
  if (c.a_layout) plan.add(GemmCopyPlan::kA);
  if (c.b_layout) plan.add(GemmCopyPlan::kB);
  if (c.a_batch) plan.add(GemmCopyPlan::kA);
  if (c.b_batch) plan.add(GemmCopyPlan::kB);
  return plan;
}

void meta_gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b) {
  const GemmCopyPlan plan = cuda_temporaries::imitating() ? cuda_gemm_copies(out, a, b) : cpu_gemm_copies(out, a, b);
  const GemmOperands g =  // freed when the GEMM returns
      make_gemm_copies(plan, a, b, [](const Tensor& t) { return make_empty(t.sizes(), t.dtype(), Device{kMeta}); });
}

}  // namespace remat::ops
