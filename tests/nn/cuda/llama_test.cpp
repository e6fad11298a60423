// Tests nn/llama.cpp on kCUDA (under --config=cuda_emu, the emulated device): torchtitan's Llama
// (grouped-query attention, rotary embeddings, SwiGLU) trains on CUDA under every benchmark
// strategy with the CPU's losses, and a Meta dry run imitating CUDA predicts each step's allocated
// and reserved memory, its segments and every allocation to the byte, from an empty cache; in f32
// and in bf16.
#include <catch2/catch.hpp>

#include <cmath>

#include "bench/training_step.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
using namespace remat::bench;

namespace {

// batch, seq, embd, heads, vocab, layers; 2 kv heads of 4 (repeat_kv), a SwiGLU of 96
ModelShape tiny_llama() {
  ModelShape shape{2, 16, 32, 4, 37, 2};
  shape.model = "llama";
  shape.kv_heads = 2;
  shape.ffn_hidden = 96;
  return shape;
}

void check_strategies_against_dry_runs(ScalarType dtype) {
  const ModelShape shape = tiny_llama();
  TrainingOptions o;
  o.dtype = dtype;
  const int64_t steps = 3;
  const std::vector<StepRecord> cpu = run_training_steps(all_strategies("llama").front(), shape, Device{kCPU}, steps, o);
  for (const Strategy& strategy : all_strategies("llama")) {
    INFO("strategy " << strategy.name << ", " << toString(dtype));
    const Device cuda = testing::cuda0();
    cuda_synchronize();
    REQUIRE(memory_allocated(cuda) == 0);  // the prediction assumes an empty cache
    const std::vector<StepRecord> measured = run_training_steps(strategy, shape, cuda, steps, o);
    std::vector<StepRecord> predicted;
    {
      DryRun dry(kCUDA);
      predicted = run_training_steps(strategy, shape, Device{kMeta}, steps, o);
    }
    REQUIRE(measured.size() == predicted.size());
    for (size_t s = 0; s < measured.size(); ++s) {
      INFO("step " << s + 1);
      CHECK(measured[s].peak_bytes == predicted[s].peak_bytes);
      CHECK(measured[s].peak_reserved_bytes == predicted[s].peak_reserved_bytes);
      CHECK(measured[s].segments == predicted[s].segments);
      CHECK(measured[s].activation_bytes == predicted[s].activation_bytes);
      CHECK(measured[s].allocation_sizes == predicted[s].allocation_sizes);
      CHECK(measured[s].peak_reserved_bytes > 0);
      // The CPU's losses: f32 to 1e-4; bf16 to its 8-bit mantissa over a few steps.
      CHECK(std::isfinite(measured[s].loss));
      CHECK(measured[s].loss == Approx(cpu[s].loss).epsilon(dtype == kFloat ? 1e-4 : 2e-2));
    }
    empty_cache(cuda);
  }
}

}  // namespace

TEST_CASE("Llama on CUDA: every strategy's allocated and reserved memory, step by step, is the dry run's (f32)",
          "[llama][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_strategies_against_dry_runs(kFloat);
}

TEST_CASE("Llama on CUDA in bf16: the CPU's losses, and the dry run's memory under every strategy",
          "[llama][cuda_memory][bf16]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_strategies_against_dry_runs(kBFloat16);
}
