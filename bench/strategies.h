// The checkpointing strategies the memory-vs-recompute benchmark compares, each with the
// closed-form activation memory it should leave after a GPT forward (see activation_model.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::bench {

struct Strategy {
  std::string name;         // command-line name
  std::string description;  // one line for the table
  nn::ActivationCheckpointing checkpointing;
  bool reentrant = false;
};

// The eight strategies of `model` ("gpt" or "llama"), in table order. The Llama's are the GPT's,
// with its scopes (ModelScopes): sac-no-fc2 is sac-no-w2 there. sac-titan is torchtitan's own
// per-op SAC policy for its Llama (every other mm, plus the attention output).
std::vector<Strategy> all_strategies(const std::string& model = "gpt");
// Looks names up (comma-separated); throws listing the known names.
std::vector<Strategy> select_strategies(const std::string& csv, const std::string& model = "gpt");

// The scopes the scope-based policies name, per model.
struct ModelScopes {
  std::string attention_core;  // the attention's core (scores, softmax, scores x V)
  std::string attention_out;   // the attention's output projection
  std::string mlp_out;         // the MLP's last projection
  static ModelScopes of(const std::string& model);
};

// Policies used above, exposed for tests.
// mm, bmm, addmm and the fused attention op (torchtitan's _save_list names its SDPA ops beside mm;
// under the math backend the fused op never runs and this is policies::save_matmuls)
PolicyFn save_matmuls_and_attention();
PolicyFn titan_policy();     // every other linear-layer matmul, plus the attention output
PolicyFn no_fc2_policy(const ModelScopes& scopes = ModelScopes::of("gpt"));    // every matmul except the MLP's fc2
PolicyFn megatron_policy(const ModelScopes& scopes = ModelScopes::of("gpt"));  // save what backward needs except the attention core

}  // namespace remat::bench
