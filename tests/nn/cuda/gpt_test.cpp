// Tests nn/gpt.cpp on kCUDA (under --config=cuda_emu, the emulated device): a GPT trains on CUDA
// under every benchmark strategy, with the CPU's losses, and a Meta dry run imitating CUDA
// predicts each step's allocated and reserved memory and its segments to the byte, from an
// empty cache, including steps of two sequence lengths in turn, which fragment the cache; with the
// math attention and with the fused one (sdpa_kernel(FLASH_ATTENTION): CUDA's
// _scaled_dot_product_efficient_attention, the CPU's flash op in the reference run).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "bench/strategies.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/op_counter.h"

using namespace remat;

namespace {

struct StepMemory {
  int64_t peak_allocated, peak_reserved, reserved, segments, allocated;
  bool operator==(const StepMemory& o) const {
    return peak_allocated == o.peak_allocated && peak_reserved == o.peak_reserved && reserved == o.reserved &&
           segments == o.segments && allocated == o.allocated;
  }
};

std::ostream& operator<<(std::ostream& os, const StepMemory& m) {
  return os << "{peak allocated " << m.peak_allocated << ", peak reserved " << m.peak_reserved << ", reserved "
            << m.reserved << ", segments " << m.segments << ", allocated " << m.allocated << "}";
}

struct Run {
  std::vector<StepMemory> steps;
  std::vector<double> losses;
  std::vector<double> params;  // after the last step
  std::vector<int64_t> deltas;  // every allocation (+) and free (-) of the steps, in order
  std::vector<int64_t> reserved;  // memory_reserved after each of them
};

constexpr int64_t kBatch = 2, kVocab = 65;
const std::vector<int64_t> kSeqs = {32, 24, 32};  // two lengths in turn: the cache fragments

// Three AdamW steps of a 2-layer GPT on `device`, from an empty cache.
Run train(const bench::Strategy& strategy, Device device, SDPBackend attention = SDPBackend::MATH) {
  Run run;
  nn::GPTConfig cfg;
  cfg.sdpa_backend = attention;
  cfg.vocab_size = kVocab;
  cfg.block_size = 32;
  cfg.n_layer = 2;
  cfg.n_head = 4;
  cfg.n_embd = 64;
  cfg.dropout = 0.0;
  cfg.options = TensorOptions().device(device);
  nn::GPT model(cfg);
  model.set_checkpointing(strategy.checkpointing);
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-3).fused(true));  // the benchmark's optimizer
  const TensorOptions lo = TensorOptions().dtype(kLong).device(device);
  MemoryTracker tracker(device);
  for (size_t step = 0; step < kSeqs.size(); ++step) {
    const int64_t seq = kSeqs[step];
    Tensor idx, targets;
    if (device.is_meta()) {
      idx = empty({kBatch, seq}, lo);
      targets = empty({kBatch, seq}, lo);
    } else {
      std::vector<double> a, b;
      for (int64_t i = 0; i < kBatch * seq; ++i) {
        a.push_back(static_cast<double>((i * 7 + 3 + static_cast<int64_t>(step)) % kVocab));
        b.push_back(static_cast<double>((i * 5 + 1) % kVocab));
      }
      idx = from_vector(a, {kBatch, seq}, lo);
      targets = from_vector(b, {kBatch, seq}, lo);
    }
    reset_peak_memory_stats(device);
    opt.zero_grad();
    nn::GPTOutput out = model.forward(idx, targets);
    out.loss.backward();
    opt.step();
    run.steps.push_back(StepMemory{max_memory_allocated(device), max_memory_reserved(device), memory_reserved(device),
                                   memory_segments(device), memory_allocated(device)});
    if (!device.is_meta()) run.losses.push_back(out.loss.item());  // after the figures: item() copies
  }
  for (const MemoryEvent& e : tracker.timeline()) {
    run.deltas.push_back(e.delta);
    run.reserved.push_back(e.reserved);
  }
  if (!device.is_meta())
    for (const Tensor& p : model.parameters())
      for (double v : p.to_vector()) run.params.push_back(v);
  return run;
}

}  // namespace

namespace {

// Every strategy trains on CUDA with the CPU's losses, and the dry run predicts its memory event by event.
void check_strategies_against_dry_runs(SDPBackend attention) {
  const Device cuda = testing::cuda0();
  const Run cpu = train(bench::all_strategies().front(), Device{kCPU}, attention);
  std::vector<double> non_reentrant_params;
  for (const bench::Strategy& strategy : bench::all_strategies()) {
    INFO("strategy " << strategy.name << ", attention " << toString(attention));
    cuda_synchronize();
    REQUIRE(memory_allocated(cuda) == 0);  // the prediction assumes an empty cache
    empty_cache(cuda);
    REQUIRE(memory_reserved(cuda) == 0);
    const Run measured = train(strategy, cuda, attention);
    Run predicted;
    {
      DryRun dry(kCUDA);
      predicted = train(strategy, Device{kMeta}, attention);
    }
    REQUIRE(measured.steps.size() == kSeqs.size());
    for (size_t s = 0; s < kSeqs.size(); ++s) {
      INFO("step " << s + 1 << " (sequence " << kSeqs[s] << ")");
      CHECK(measured.steps[s] == predicted.steps[s]);
      CHECK(measured.steps[s].reserved > 0);
    }
    // Not only the peaks: the same allocations and frees, in the same order.
    CHECK(measured.deltas.size() == predicted.deltas.size());
    CHECK(measured.deltas == predicted.deltas);
    CHECK(measured.reserved == predicted.reserved);  // and the cache's segments taken at the same events
    // The CPU's losses, in f32 (TF32 is off by default).
    REQUIRE(measured.losses.size() == cpu.losses.size());
    for (size_t s = 0; s < cpu.losses.size(); ++s)
      CHECK(measured.losses[s] == Approx(cpu.losses[s]).epsilon(1e-4));
    // The non-reentrant strategies give the same bits on CUDA.
    if (!strategy.reentrant) {
      if (non_reentrant_params.empty()) {
        non_reentrant_params = measured.params;
      } else {
        CHECK(measured.params == non_reentrant_params);
      }
    }
    empty_cache(cuda);
  }
}

}  // namespace

TEST_CASE("GPT on CUDA: every strategy's allocated and reserved memory, step by step, is the dry run's",
          "[gpt][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_strategies_against_dry_runs(SDPBackend::MATH);
}

TEST_CASE("GPT on CUDA with the fused attention: the CPU's losses, and the dry run's memory under every strategy",
          "[gpt][cuda_memory][attention]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  {
    // CUDA's fused op runs, once a block each way, and the math composite does not.
    testing::CountOps ops;
    train(bench::all_strategies().front(), testing::cuda0(), SDPBackend::FLASH_ATTENTION);
    const int calls = 2 * static_cast<int>(kSeqs.size());  // 2 layers
    CHECK(ops.counter->count("aten::_scaled_dot_product_efficient_attention") == calls);
    CHECK(ops.counter->count("aten::_scaled_dot_product_efficient_attention_backward") == calls);
    CHECK(ops.counter->count("aten::_softmax") == 0);
  }
  check_strategies_against_dry_runs(SDPBackend::FLASH_ATTENTION);
}
