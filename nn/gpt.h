// A small GPT (nanoGPT's model.py in C++): token and position embeddings, pre-norm blocks, a
// final norm and a language-model head (tied to the token embedding or not), trained with
// cross-entropy. Activation checkpointing of its blocks is one setting:
//
//   GPTConfig cfg;  cfg.n_layer = 4;  cfg.n_embd = 256;  cfg.n_head = 4;  cfg.block_size = 128;
//   GPT model(cfg);
//   model.set_checkpointing(ActivationCheckpointing::full());                          // every block
//   model.set_checkpointing(ActivationCheckpointing::every_nth(2));                    // blocks 0, 2, ...
//   model.set_checkpointing(ActivationCheckpointing::selective(policies::save_matmuls()));  // SAC
//   GPTOutput out = model.forward(idx, targets);   out.loss.backward();
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/planner.h"
#include "checkpoint/selective.h"
#include "nn/embedding.h"
#include "nn/transformer.h"

namespace remat::nn {

// How a model checkpoints its blocks.
struct ActivationCheckpointing {
  enum class Mode { None, Full, EveryNth, Selective };
  Mode mode = Mode::None;
  bool use_reentrant = false;
  int64_t every_n = 1;                             // EveryNth: blocks 0, n, 2n, ...
  PolicyFn policy;                                 // Selective
  std::function<CheckpointContexts()> context_fn;  // Selective with a custom context pair
  std::optional<bool> early_stop;

  static ActivationCheckpointing none() { return {}; }
  static ActivationCheckpointing full(bool use_reentrant = false);
  static ActivationCheckpointing every_nth(int64_t n, bool use_reentrant = false);
  static ActivationCheckpointing selective(PolicyFn policy);
  static ActivationCheckpointing selective(std::function<CheckpointContexts()> context_fn);
  // Every block under SAC with a plan's policy (plan_checkpointing: a memory budget in).
  static ActivationCheckpointing planned(const CheckpointPlan& plan) { return selective(plan.policy()); }

  bool applies_to(int64_t block) const;
  CheckpointOptions options() const;  // the checkpoint options for one block
  std::string describe() const;
};

struct GPTConfig {
  int64_t vocab_size = 65;
  int64_t block_size = 128;  // longest sequence
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 256;
  double dropout = 0.0;
  bool bias = true;
  bool tie_weights = true;   // lm_head.weight is wte.weight
  bool rms_norm = false;     // RMSNorm instead of LayerNorm
  uint64_t seed = 1337;      // initialisation (nanoGPT's: N(0, 0.02), residual projections scaled)
  // The attention core's backend (torch.nn.attention.sdpa_kernel around each block's attention):
  // MATH, the composite SAC policies see op by op, or FLASH_ATTENTION, the fused op of the device:
  // aten::_scaled_dot_product_flash_attention_for_cpu on the CPU,
  // aten::_scaled_dot_product_efficient_attention on CUDA (saves output and logsumexp, no [T, T] weights).
  SDPBackend sdpa_backend = SDPBackend::MATH;
  TensorOptions options;     // dtype and device of the parameters
};

struct GPTOutput {
  Tensor logits;  // [B, T, vocab]
  Tensor loss;    // scalar, when targets were given
};

class GPT : public Module {
 public:
  explicit GPT(const GPTConfig& config);

  // idx: Long [B, T]; targets: Long [B, T] or undefined.
  GPTOutput forward(const Tensor& idx, const Tensor& targets = {}) const;
  void set_checkpointing(ActivationCheckpointing ac) { checkpointing_ = std::move(ac); }
  const ActivationCheckpointing& checkpointing() const { return checkpointing_; }
  const GPTConfig& config() const { return config_; }
  // Samples max_new_tokens continuations of idx (greedy when temperature == 0).
  Tensor generate(const Tensor& idx, int64_t max_new_tokens, double temperature = 1.0, Generator* generator = nullptr);

  std::shared_ptr<Embedding> wte, wpe;
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<Module> layers;  // children "0" .. "n_layer-1"
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<Module> ln_f;
  std::shared_ptr<Linear> lm_head;

 private:
  Tensor final_norm(const Tensor& x) const;
  void init_weights();
  GPTConfig config_;
  Generator init_generator_;
  ActivationCheckpointing checkpointing_;
};

}  // namespace remat::nn
