// The CUDA ops' temporaries: the GEMM's and the reduction's rules (see cuda_temporaries.h).
#include "ops/cuda_temporaries.h"

#include <algorithm>

#include "engine/core/allocator.h"
#include "ops/meta.h"

namespace remat::ops::cuda_temporaries {

bool imitating() { return meta_accounting() == kCUDA; }

int64_t collapsed_batch_stride(const Tensor& t, int64_t matrix_elems) {
  int64_t stride = -1, expected = -1;
  for (int64_t d = t.dim() - 3; d >= 0; --d) {
    if (t.sizes()[d] == 1) continue;  // size-1 dims are never stepped
    if (stride < 0) {
      stride = t.strides()[d];
    } else if (t.strides()[d] != expected) {
      return -1;
    }
    expected = t.strides()[d] * t.sizes()[d];
  }
  return stride < 0 ? matrix_elems : stride;
}

GemmCopies gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b) {
  GemmCopies c;
  const int64_t m = out.sizes()[out.dim() - 2], n = out.sizes()[out.dim() - 1], k = a.sizes()[a.dim() - 1];
  auto stride = [](const Tensor& t, int64_t from_end) { return t.strides()[t.dim() - from_end]; };
  c.a_layout = !gemm_operand(a, stride(a, 2), stride(a, 1), m, k).t.defined();
  c.b_layout = !gemm_operand(b, stride(b, 2), stride(b, 1), k, n).t.defined();
  // A layout copy is contiguous, so its batch dims collapse.
  c.a_batch = !c.a_layout && a.dim() > 2 && collapsed_batch_stride(a, m * k) < 0;
  c.b_batch = !c.b_layout && b.dim() > 2 && collapsed_batch_stride(b, k * n) < 0;
  return c;
}

ReduceLayout reduce_layout(const Tensor& self, const std::vector<bool>& mask, int64_t out_numel) {
  ReduceLayout l;
  std::vector<char> kinds;  // 'K' / 'R' over non-size-1 dims
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) continue;
    (mask[static_cast<size_t>(d)] ? l.reduced : l.kept).push_back(d);
    kinds.push_back(mask[static_cast<size_t>(d)] ? 'R' : 'K');
  }
  for (int64_t d : l.reduced) l.red_n *= self.sizes()[d];
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
    l.permuted_copy = true;
    l.outer = out_numel;
    return l;
  }
  size_t pos = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) continue;
    if (pos < first_r) l.outer *= self.sizes()[d];
    else if (pos > last_r) l.inner *= self.sizes()[d];
    ++pos;
  }
  return l;
}

}  // namespace remat::ops::cuda_temporaries
