// nanoGPT's GPT in C++ (see gpt.h).
#include "nn/gpt.h"

#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "nn/init.h"
#include "ops/functions.h"

namespace remat::nn {

ActivationCheckpointing ActivationCheckpointing::full(bool use_reentrant) {
  ActivationCheckpointing a;
  a.mode = Mode::Full;
  a.use_reentrant = use_reentrant;
  return a;
}
ActivationCheckpointing ActivationCheckpointing::every_nth(int64_t n, bool use_reentrant) {
  REMAT_CHECK(n >= 1, "ActivationCheckpointing::every_nth: n must be >= 1 (got ", n, ")");
  ActivationCheckpointing a;
  a.mode = Mode::EveryNth;
  a.every_n = n;
  a.use_reentrant = use_reentrant;
  return a;
}
ActivationCheckpointing ActivationCheckpointing::selective(PolicyFn policy) {
  REMAT_CHECK(static_cast<bool>(policy), "ActivationCheckpointing::selective: empty policy");
  ActivationCheckpointing a;
  a.mode = Mode::Selective;
  a.policy = std::move(policy);
  return a;
}
ActivationCheckpointing ActivationCheckpointing::selective(std::function<CheckpointContexts()> context_fn) {
  REMAT_CHECK(static_cast<bool>(context_fn), "ActivationCheckpointing::selective: empty context_fn");
  ActivationCheckpointing a;
  a.mode = Mode::Selective;
  a.context_fn = std::move(context_fn);
  return a;
}

bool ActivationCheckpointing::applies_to(int64_t block) const {
  switch (mode) {
    case Mode::None: return false;
    case Mode::EveryNth: return block % every_n == 0;
    default: return true;
  }
}

CheckpointOptions ActivationCheckpointing::options() const {
  CheckpointOptions o;
  o.use_reentrant = use_reentrant;
  o.early_stop = early_stop;
  if (mode == Mode::Selective) {
    if (context_fn) {
      o.context_fn = context_fn;
    } else {
      PolicyFn p = policy;
      o.context_fn = [p] { return create_selective_checkpoint_contexts(p); };
    }
  }
  return o;
}

std::string ActivationCheckpointing::describe() const {
  switch (mode) {
    case Mode::None: return "none";
    case Mode::Full: return use_reentrant ? "full (reentrant)" : "full";
    case Mode::EveryNth: return "every " + std::to_string(every_n) + " blocks";
    case Mode::Selective: return "selective";
  }
  return "?";
}

GPT::GPT(const GPTConfig& c) : Module("GPT"), config_(c), init_generator_(c.seed) {
  REMAT_CHECK(c.vocab_size > 0 && c.block_size > 0 && c.n_layer > 0, "GPT: vocab_size, block_size and n_layer must be "
              "positive (got ", c.vocab_size, ", ", c.block_size, ", ", c.n_layer, ")");
  Generator* g = &init_generator_;
  wte = register_module("wte", std::make_shared<Embedding>(c.vocab_size, c.n_embd, g, c.options));
  wpe = register_module("wpe", std::make_shared<Embedding>(c.block_size, c.n_embd, g, c.options));
  drop = register_module("drop", std::make_shared<Dropout>(c.dropout));
  layers = register_module("layers", std::make_shared<Module>("ModuleList"));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    blocks.push_back(layers->register_module(
        std::to_string(i), std::make_shared<Block>(c.n_embd, c.n_head, c.dropout, c.bias, c.rms_norm, g, c.options)));
    blocks.back()->attn->sdpa_backend = c.sdpa_backend;
  }
  if (c.rms_norm) ln_f = register_module("ln_f", std::make_shared<RMSNorm>(c.n_embd, 1e-6, true, c.options));
  else ln_f = register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd, 1e-5, true, c.bias, c.options));
  lm_head = register_module("lm_head", std::make_shared<Linear>(c.n_embd, c.vocab_size, false, g, c.options));
  if (c.tie_weights) lm_head->weight = wte->weight;  // one tensor, two names
  init_weights();
}

// nanoGPT's _init_weights: every Linear and Embedding weight ~ N(0, 0.02), biases 0, and the
// residual projections (attn.proj, mlp.fc2) ~ N(0, 0.02 / sqrt(2 n_layer)) (GPT-2's scaling).
// With PyTorch's module defaults instead (N(0, 1) embeddings, tied to the head), the initial
// logits have a standard deviation near sqrt(n_embd) and the initial loss is many times ln(vocab).
void GPT::init_weights() {
  Generator* g = &init_generator_;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config_.n_layer));
  init::normal_(wte->weight, 0.0, 0.02, g);
  init::normal_(wpe->weight, 0.0, 0.02, g);
  auto linear = [&](Linear& l, double std) {
    init::normal_(l.weight, 0.0, std, g);
    if (l.bias.defined()) {
      autograd::NoGradGuard no_grad;
      zero_(l.bias);
    }
  };
  for (const std::shared_ptr<Block>& b : blocks) {
    linear(*b->attn->qkv, 0.02);
    linear(*b->attn->proj, residual_std);
    linear(*b->mlp->fc1, 0.02);
    linear(*b->mlp->fc2, residual_std);
  }
  if (!config_.tie_weights) linear(*lm_head, 0.02);
}

Tensor GPT::final_norm(const Tensor& x) const {
  if (auto* ln = dynamic_cast<LayerNorm*>(ln_f.get())) return ln->forward(x);
  return static_cast<RMSNorm*>(ln_f.get())->forward(x);
}

GPTOutput GPT::forward(const Tensor& idx, const Tensor& targets) const {
  REMAT_CHECK(idx.defined() && idx.dim() == 2 && idx.dtype() == kLong, "GPT: idx must be a Long tensor [B, T], got ",
              idx.defined() ? idx.sizes() : Shape{}, " ", idx.defined() ? toString(idx.dtype()) : "undefined");
  const int64_t B = idx.size(0), T = idx.size(1);
  REMAT_CHECK(T <= config_.block_size, "GPT: Cannot forward sequence of length ", T, ", block size is only ",
              config_.block_size);
  DefaultMemoryPhaseGuard phase(MemoryPhase::Forward);  // for the memory tracker
  Tensor pos = arange(T, TensorOptions().dtype(kLong).device(idx.device()));
  Tensor x = drop->forward(add(wte->forward(idx), wpe->forward(pos)));
  {
    remat::scope s("layers");
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::shared_ptr<Block>& block = blocks[i];
      if (checkpointing_.applies_to(static_cast<int64_t>(i)) && autograd::GradMode::is_enabled()) {
        x = checkpoint([block](const Tensor& h) { return block->forward(h); }, x, checkpointing_.options());
      } else {
        x = block->forward(x);
      }
    }
  }
  GPTOutput out;
  out.logits = lm_head->forward(final_norm(x));
  if (targets.defined()) {
    REMAT_CHECK(targets.sizes() == idx.sizes(), "GPT: targets of shape ", targets.sizes(), " do not match idx ",
                idx.sizes());
    out.loss = cross_entropy(out.logits.view({B * T, config_.vocab_size}), targets.reshape({B * T}));
  }
  return out;
}

Tensor GPT::generate(const Tensor& idx, int64_t max_new_tokens, double temperature, Generator* generator) {
  autograd::NoGradGuard no_grad;
  bool was_training = is_training();
  eval();
  std::vector<double> tokens = idx.to_vector();
  const int64_t B = idx.size(0);
  int64_t T = idx.size(1);
  Generator& gen = generator != nullptr ? *generator : default_generator(Device{kCPU});
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    int64_t ctx = std::min<int64_t>(T, config_.block_size);
    std::vector<double> window;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = T - ctx; t < T; ++t) window.push_back(tokens[static_cast<size_t>(b * T + t)]);
    Tensor in = from_vector(window, {B, ctx}, TensorOptions().dtype(kLong).device(idx.device()));
    Tensor logits = forward(in).logits.slice(1, ctx - 1, ctx).reshape({B, config_.vocab_size}).to(kFloat);
    std::vector<double> next;
    if (temperature <= 0) {
      std::vector<double> l = logits.to_vector();
      for (int64_t b = 0; b < B; ++b) {
        int64_t best = 0;
        for (int64_t v = 1; v < config_.vocab_size; ++v)
          if (l[static_cast<size_t>(b * config_.vocab_size + v)] > l[static_cast<size_t>(b * config_.vocab_size + best)])
            best = v;
        next.push_back(static_cast<double>(best));
      }
    } else {
      std::vector<double> p = softmax(logits * (1.0 / temperature), -1).to(Device{kCPU}).to_vector();
      std::vector<double> u = rand({B}, TensorOptions(), &gen).to_vector();
      for (int64_t b = 0; b < B; ++b) {
        double acc = 0;
        int64_t pick = config_.vocab_size - 1;
        for (int64_t v = 0; v < config_.vocab_size; ++v) {
          acc += p[static_cast<size_t>(b * config_.vocab_size + v)];
          if (u[static_cast<size_t>(b)] < acc) {
            pick = v;
            break;
          }
        }
        next.push_back(static_cast<double>(pick));
      }
    }
    std::vector<double> grown;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t t = 0; t < T; ++t) grown.push_back(tokens[static_cast<size_t>(b * T + t)]);
      grown.push_back(next[static_cast<size_t>(b)]);
    }
    tokens = std::move(grown);
    ++T;
  }
  train(was_training);
  return from_vector(tokens, {B, T}, TensorOptions().dtype(kLong).device(idx.device()));
}

}  // namespace remat::nn
