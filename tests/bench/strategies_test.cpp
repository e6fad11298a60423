// Tests bench/strategies.{h,cpp}: the benchmark's strategies per model, and what their
// scope-based policies decide (no PyTorch counterpart: torchtitan's apply_ac builds its own).
#include <catch2/catch.hpp>

#include "bench/strategies.h"
#include "bench/training_step.h"

using namespace remat;
using namespace remat::bench;

namespace {
std::vector<std::string> names(const std::vector<Strategy>& strategies) {
  std::vector<std::string> out;
  for (const Strategy& s : strategies) out.push_back(s.name);
  return out;
}
}  // namespace

TEST_CASE("strategies: the GPT's eight and the Llama's, which names its MLP's last projection w2", "[bench]") {
  CHECK(names(all_strategies()) == std::vector<std::string>{"none", "full", "full-reentrant", "every2", "sac-mm",
                                                             "sac-titan", "sac-no-fc2", "sac-megatron"});
  CHECK(names(all_strategies("llama")) == std::vector<std::string>{"none", "full", "full-reentrant", "every2",
                                                                    "sac-mm", "sac-titan", "sac-no-w2", "sac-megatron"});
  CHECK(names(select_strategies("sac-no-w2,none", "llama")) == std::vector<std::string>{"sac-no-w2", "none"});
  CHECK(ModelScopes::of("llama").mlp_out == "*.feed_forward.w2");
  CHECK(ModelScopes::of("gpt").attention_core == "*.attn.core");
}

TEST_CASE("strategies: unknown names and models are refused, naming the known ones", "[bench]") {
  CHECK_THROWS_WITH(select_strategies("sac-no-fc2", "llama"),
                    "--strategies: unknown strategy 'sac-no-fc2'; known: none, full, full-reentrant, every2, sac-mm, sac-titan, "
                    "sac-no-w2, sac-megatron");
  CHECK_THROWS_WITH(select_strategies(",", "gpt"), "--strategies: no strategy selected");
  CHECK_THROWS_WITH(all_strategies("bert"), "all_strategies: the model must be gpt or llama, got 'bert'");
}

TEST_CASE("strategies: on the Llama, sac-megatron recomputes its attention core and sac-titan keeps fewer bytes "
          "than sac-mm", "[bench][dry_run]") {
  ModelShape llama{2, 16, 32, 4, 11, 2};
  llama.model = "llama";
  llama.kv_heads = 2;
  std::map<std::string, StepRecord> by_name;
  for (const Strategy& s : all_strategies("llama")) by_name[s.name] = run_training_steps(s, llama, Device{kMeta}, 2)[1];
  CHECK(by_name["sac-titan"].activation_bytes < by_name["sac-mm"].activation_bytes);
  CHECK(by_name["full"].activation_bytes < by_name["sac-titan"].activation_bytes);
  CHECK(by_name["sac-megatron"].checkpoint.total.flops_recomputed > 0);
  CHECK(by_name["sac-mm"].activation_bytes < by_name["none"].activation_bytes);
}
