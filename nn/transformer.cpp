// GPT-2's MLP, causal self-attention and pre-norm block (nanoGPT's model.py, in C++).
#include "nn/transformer.h"

#include "ops/functions.h"

namespace remat::nn {

MLP::MLP(int64_t n_embd, int64_t hidden, double dropout, bool bias, Generator* g, TensorOptions options)
    : Module("MLP") {
  fc1 = register_module("fc1", std::make_shared<Linear>(n_embd, hidden, bias, g, options));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, n_embd, bias, g, options));
  drop = register_module("drop", std::make_shared<Dropout>(dropout));
}

Tensor MLP::forward(const Tensor& x) const {
  auto s = enter();
  Tensor h = fc1->forward(x);
  {
    remat::scope act("act");
    h = gelu(h, "tanh");
  }
  return drop->forward(fc2->forward(h));
}

CausalSelfAttention::CausalSelfAttention(int64_t c, int64_t h, double dropout, bool bias, Generator* g,
                                         TensorOptions options)
    : Module("CausalSelfAttention"), n_embd(c), n_head(h), attn_dropout(dropout) {
  REMAT_CHECK(h > 0 && c % h == 0, "CausalSelfAttention: n_embd (", c, ") must be divisible by n_head (", h, ")");
  qkv = register_module("qkv", std::make_shared<Linear>(c, 3 * c, bias, g, options));
  proj = register_module("proj", std::make_shared<Linear>(c, c, bias, g, options));
  drop = register_module("drop", std::make_shared<Dropout>(dropout));
}

Tensor CausalSelfAttention::forward(const Tensor& x) const {
  auto s = enter();
  REMAT_CHECK(x.dim() == 3 && x.size(2) == n_embd, "CausalSelfAttention: expected input [B, T, ", n_embd,
              "], got ", x.sizes());
  const int64_t B = x.size(0), T = x.size(1), C = n_embd, H = n_head, D = C / H;
  Tensor qkv_out = qkv->forward(x);  // [B, T, 3C]
  // q, k, v: strided views [B, H, T, D] of qkv_out, made as nanoGPT makes them (split, then view
  // and transpose each), so that every op call is the PyTorch GPT's (a plan applies to both).
  std::vector<Tensor> parts = split(qkv_out, C, 2);
  Tensor q = parts[0].view({B, T, H, D}).transpose(1, 2);
  Tensor k = parts[1].view({B, T, H, D}).transpose(1, 2);
  Tensor v = parts[2].view({B, T, H, D}).transpose(1, 2);
  Tensor y;
  {
    remat::scope core("core");  // Megatron's "selective" recompute targets exactly this part
    sdpa_kernel backend(sdpa_backend);
    y = scaled_dot_product_attention(q, k, v, /*is_causal=*/true, is_training() ? attn_dropout : 0.0);
  }
  y = y.transpose(1, 2).reshape({B, T, C});
  return drop->forward(proj->forward(y));
}

Block::Block(int64_t c, int64_t h, double dropout, bool bias, bool use_rms_norm, Generator* g, TensorOptions options)
    : Module("Block") {
  auto make_norm = [&]() -> std::shared_ptr<Module> {
    if (use_rms_norm) return std::make_shared<RMSNorm>(c, 1e-6, true, options);
    return std::make_shared<LayerNorm>(c, 1e-5, true, bias, options);
  };
  ln1 = register_module("ln1", make_norm());
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(c, h, dropout, bias, g, options));
  ln2 = register_module("ln2", make_norm());
  mlp = register_module("mlp", std::make_shared<MLP>(c, 4 * c, dropout, bias, g, options));
}

Tensor Block::norm(const std::shared_ptr<Module>& m, const Tensor& x) const {
  if (auto* ln = dynamic_cast<LayerNorm*>(m.get())) return ln->forward(x);
  return static_cast<RMSNorm*>(m.get())->forward(x);
}

Tensor Block::forward(const Tensor& x) const {
  auto s = enter();
  Tensor h = x + attn->forward(norm(ln1, x));
  return h + mlp->forward(norm(ln2, h));
}

}  // namespace remat::nn
