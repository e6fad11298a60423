// Mirrors ATen/native/transformers/cuda/mem_eff_attention (kernel_forward.h, kernel_backward.h):
// the fused attention on CUDA, forward and backward, without the [L, S] weights. Float and double
// (the accumulation type is the element type). Causal masking is top-left aligned (query i sees
// keys j <= i), as the math path of ops/attention.cpp.
//
//   forward:  s_ij = scale * q_i . k_j;  lse_i = log sum_j exp(s_ij);  out_i = sum_j exp(s_ij - lse_i) v_j
//   backward: p_ij = exp(s_ij - lse_i) (recomputed from q, k and lse);  delta_i = dO_i . out_i
//             ds_ij = p_ij (dO_i . v_j - delta_i)
//             dq_i = scale sum_j ds_ij k_j           (a warp per query row)
//             dk_j = scale sum_i ds_ij q_i,  dv_j = sum_i p_ij dO_i   (a warp per key row)
//
// Every row's sums run in one fixed order and every output element is written by one thread, so
// results are bitwise reproducible (no atomics), and no workspace is needed: a warp keeps its
// row's head-dim slice in registers, which bounds E by kAttentionMaxHeadDim (workspace_sizes.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/workspace_sizes.h"

namespace remat::kernels::cuda {

struct AttentionSizes {
  int64_t B, H, L, S, E;  // batch, heads, query rows, key rows, head dim
};
// Element strides of a [B, H, rows, E] operand (any strides: the kernels read them as given).
struct AttentionStrides {
  int64_t b, h, row, e;
};

// out [B, H, L, E]; lse (the accumulation type, contiguous [B, H, lse_len] with lse_len >= L; rows
// L..lse_len get +inf) or nullptr; q [B, H, L, E], k and v [B, H, S, E].
void attention_forward(ScalarType dtype, void* out, AttentionStrides out_s, void* lse, int64_t lse_len,
                       const void* q, AttentionStrides q_s, const void* k, AttentionStrides k_s, const void* v,
                       AttentionStrides v_s, AttentionSizes n, bool is_causal, double scale, cudaStream_t stream);

// The three gradients from dout, q, k, v, out and the forward's lse.
void attention_backward(ScalarType dtype, void* dq, AttentionStrides dq_s, void* dk, AttentionStrides dk_s, void* dv,
                        AttentionStrides dv_s, const void* dout, AttentionStrides dout_s, const void* q,
                        AttentionStrides q_s, const void* k, AttentionStrides k_s, const void* v, AttentionStrides v_s,
                        const void* out, AttentionStrides out_s, const void* lse, int64_t lse_len, AttentionSizes n,
                        bool is_causal, double scale, cudaStream_t stream);

}  // namespace remat::kernels::cuda
