// The pieces of a GPT block, in the shape of nanoGPT / Megatron: MLP, CausalSelfAttention and
// Block (mirrors torch/nn/modules/transformer.py's roles, with GPT-2's pre-norm layout).
//
// Scope names (what selective-checkpoint policies match): a block is "layers.<i>"; inside it
// "ln1", "attn" (with "qkv", "core" around the attention core, "proj"), "ln2" and "mlp"
// (with "fc1", "act", "fc2").
#pragma once

#include <memory>

#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/normalization.h"
#include "ops/sdpa_kernel.h"

namespace remat::nn {

class MLP : public Module {
 public:
  MLP(int64_t n_embd, int64_t hidden, double dropout, bool bias, Generator* generator, TensorOptions options = {});
  Tensor forward(const Tensor& x) const;  // fc2(gelu_tanh(fc1(x))), then dropout
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;
};

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t n_embd, int64_t n_head, double dropout, bool bias, Generator* generator,
                      TensorOptions options = {});
  // x [B, T, C] -> [B, T, C]; the attention core is scaled_dot_product_attention(is_causal)
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<Linear> qkv, proj;
  std::shared_ptr<Dropout> drop;
  int64_t n_embd, n_head;
  double attn_dropout;
  // The backend forward pins around scaled_dot_product_attention (also in a checkpoint's rerun):
  // an sdpa_kernel guard outside the module does not reach inside it.
  SDPBackend sdpa_backend = SDPBackend::MATH;
};

class Block : public Module {
 public:
  Block(int64_t n_embd, int64_t n_head, double dropout, bool bias, bool rms_norm, Generator* generator,
        TensorOptions options = {});
  Tensor forward(const Tensor& x) const;  // x + attn(ln1(x)), then + mlp(ln2(x))
  std::shared_ptr<Module> ln1, ln2;       // LayerNorm or RMSNorm
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;

 private:
  Tensor norm(const std::shared_ptr<Module>& m, const Tensor& x) const;
};

}  // namespace remat::nn
