// What the CUDA ops allocate besides their outputs (no PyTorch counterpart: FakeTensorMode does not
// count memory, and MemTracker measures it on the device): copies of operands the kernels cannot
// read as they are, workspaces, the index-error flag. The rules are declared here once: the CUDA
// ops (ops/cuda/) decide by them, and a Meta dry run that imitates CUDA (meta_accounting() == kCUDA)
// makes the same allocations, in the same order, from its Meta kernels, so that it predicts a CUDA
// step's memory_allocated and memory_reserved to the byte. Workspace sizes come from
// kernels/cuda/workspace_sizes.h, which the kernels plan their launches by.
//
// The GEMM's copies are a plan both the CUDA kernel and the Meta kernel make (ops/gemm_copies.h);
// the reduction's, the normalizations', the loss's, embedding's and dropout's are templates both
// run (reduce_input here, ops/norm_buffers.h, ops/loss_defs.h, ops/embedding_defs.h,
// ops/dropout_defs.h), over CUDACopies or MetaCopies:
//   void embedding_meta_temporaries(out, weight, indices) {  // after the output, as the kernel
//     if (cuda_temporaries::imitating()) embedding_temporaries<MetaCopies, kCUDA>(out, weight, indices);
//     else embedding_temporaries<MetaCopies, kCPU>(out, weight, indices);
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"
#include "kernels/cuda/workspace_sizes.h"

namespace remat::ops::cuda_temporaries {

// True inside a Meta dry run that counts like CUDA.
bool imitating();

// ---- the rules, shared with ops/cuda/ ----

// cuda_workspace(nbytes) and the index-error flag are int64 tensors of these sizes.
inline int64_t workspace_words(size_t nbytes) { return static_cast<int64_t>((nbytes + 7) / 8); }
constexpr int64_t kIndexErrorWords = 1;
// The index-error flag of a CUDA kernel that checks indices (CUDAIndexError, ops/cuda/cuda_utils.h
// resets and reads it), on device (Meta in a dry run).
inline Tensor index_error_flag(const Device& device) { return make_empty({kIndexErrorWords}, kLong, device); }

// Which GEMM operands the CUDA GEMM copies, in this order: a, then b, when neither row- nor
// column-major; then a, then b, when a batched operand's batch dims do not collapse into one
// stride (cuBLAS's strided-batched GEMM takes one). At most one copy per operand.
struct GemmCopies {
  bool a_layout = false, b_layout = false, a_batch = false, b_batch = false;
};
GemmCopies gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b);
// The one stride between consecutive batch entries of t's batch dims, or -1 when they do not collapse.
int64_t collapsed_batch_stride(const Tensor& t, int64_t matrix_elems);

// How the CUDA reduction reads `self` reduced over `mask` (after making it contiguous): as
// [outer, reduced, inner], or (reduced dims not one run) through a copy with them moved last.
struct ReduceLayout {
  std::vector<int64_t> kept, reduced;  // non-size-1 dims of self
  bool permuted_copy = false;
  int64_t outer = 1, red_n = 1, inner = 1;
};
ReduceLayout reduce_layout(const Tensor& self, const std::vector<bool>& mask, int64_t out_numel);

// What the CUDA reduction of `self` over `mask` into `out` (not empty) reads: self converted to
// dtype and contiguous, as [outer, reduced, inner] (through a copy with the reduced dims last
// when they are not one run), and its workspace. All undefined when self is empty (no kernel
// runs). Copies: CUDACopies (ops/cuda/cuda_utils.h) in the kernel, MetaCopies
// (ops/meta_copies.h) in a dry run's Meta kernel.
struct ReduceInput {
  Tensor in;
  ReduceLayout layout;
  Tensor workspace;
};
template <class Copies>
ReduceInput reduce_input(const Tensor& self, const std::vector<bool>& mask, ScalarType dtype, const Tensor& out) {
  ReduceInput r;
  if (self.numel() == 0) return r;
  r.in = Copies::contiguous(Copies::cast(self, dtype));
  r.layout = reduce_layout(self, mask, out.numel());
  if (r.layout.permuted_copy) {  // the new copy is made before the old one goes
    Shape sizes, strides;
    for (const std::vector<int64_t>* group : {&r.layout.kept, &r.layout.reduced}) {
      for (int64_t d : *group) {
        sizes.push_back(r.in.sizes()[static_cast<size_t>(d)]);
        strides.push_back(r.in.strides()[static_cast<size_t>(d)]);
      }
    }
    r.in = Copies::contiguous(make_alias(r.in, sizes, strides, r.in.storage_offset()));
  }
  const size_t ws_bytes =
      kernels::cuda::reduce_workspace_bytes(dtype, r.layout.outer, r.layout.red_n, r.layout.inner);
  if (ws_bytes > 0) r.workspace = Copies::workspace(ws_bytes, out.device());
  return r;
}

}  // namespace remat::ops::cuda_temporaries
