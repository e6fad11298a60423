// Mirrors ATen/native/cpu/FlashAttentionKernel.cpp (cpu_flash_attention, cpu_flash_attention_backward):
// attention computed block by block, blocks of queries against blocks of keys with an online
// softmax, so that no [L, S] score matrix is ever stored. Forward keeps the output and each query
// row's log-sum-exp; backward recomputes the attention weights P from q, k and the log-sum-exp,
// one block at a time (FlashAttention-2's backward).
//
//   forward:  out = softmax(scale * q k^T (+ causal mask)) v,   lse = log(sum(exp(scale * q k^T)))
//
// Sizes: B batch, H heads, L queries, S keys, E head dim (the same for q, k and v). Every operand
// is a [B, H, rows, E] array given by its element strides (any layout whose head dim has stride 1,
// such as a transposed view of a qkv projection). Products of blocks run through gemm (oneDNN,
// OpenBLAS or Eigen), accumulating in float for bfloat16/half inputs, which are widened to float a
// block (or a head) at a time. OpenMP runs over (batch * head, query block) in forward and over
// batch * head in backward (the key gradients sum over every query block).
#pragma once

#include <cstdint>

#include "kernels/cpu/pointwise.h"

namespace remat::kernels::cpu {

struct AttentionSizes {
  int64_t B = 0, H = 0, L = 0, S = 0, E = 0;
};

// Element strides of a [B, H, rows, E] operand: batch, head, row (the head dim's stride is 1).
// logsumexp [B, H, L] uses b, h and t (its one element per row).
struct HeadStrides {
  int64_t b = 0, h = 0, t = 0;
};

// Causal masking is top-left aligned (query i sees keys 0 .. i), as PyTorch's is_causal.
// out: [B, H, L, E]; lse: [B, H, L] in acc_t<T>.
template <class T>
void flash_attention_forward(T* out, HeadStrides out_st, acc_t<T>* lse, HeadStrides lse_st, const T* q,
                             HeadStrides q_st, const T* k, HeadStrides k_st, const T* v, HeadStrides v_st,
                             const AttentionSizes& n, bool is_causal, acc_t<T> scale);

// dq, dk, dv: [B, H, L | S | S, E], fully written (not accumulated into).
template <class T>
void flash_attention_backward(T* dq, HeadStrides dq_st, T* dk, HeadStrides dk_st, T* dv, HeadStrides dv_st,
                              const T* dout, HeadStrides dout_st, const T* q, HeadStrides q_st, const T* k,
                              HeadStrides k_st, const T* v, HeadStrides v_st, const T* out, HeadStrides out_st,
                              const acc_t<T>* lse, HeadStrides lse_st, const AttentionSizes& n, bool is_causal,
                              acc_t<T> scale);

// The block sizes the kernels use for L queries (PyTorch's: 32, 64 or 256 queries, 512 keys).
int64_t flash_attention_query_block(int64_t L);
constexpr int64_t kFlashAttentionKeyBlock = 512;

}  // namespace remat::kernels::cpu
