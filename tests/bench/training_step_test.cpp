// Tests bench/training_step.{h,cpp}: a GPT training step on the Meta device is an exact dry run
// of the same step on the CPU, for every benchmark strategy.
#include <catch2/catch.hpp>

#include <sstream>

#include "bench/training_step.h"

using namespace remat;
using namespace remat::bench;

namespace {

// batch, seq, embd, heads, vocab, layers
const ModelShape kTiny{2, 8, 16, 2, 11, 2};
// Activations decide the peak: long sequences, a small model.
const ModelShape kActivationBound{4, 64, 32, 2, 17, 3};
// The benchmark's default model (config A).
const ModelShape kConfigA{8, 128, 256, 4, 65, 4};

void check_dry_run_matches(const Strategy& s, const ModelShape& shape, int64_t steps,
                           SDPBackend attention = SDPBackend::MATH) {
  INFO("strategy " << s.name << ", " << shape.layers << " layers, d_model " << shape.embd << ", seq " << shape.seq
                   << ", attention " << toString(attention));
  TrainingOptions o;
  o.keep_timeline = true;
  o.attention = attention;
  std::vector<StepRecord> cpu = run_training_steps(s, shape, Device{kCPU}, steps, o);
  std::vector<StepRecord> meta = run_training_steps(s, shape, Device{kMeta}, steps, o);
  REQUIRE(cpu.size() == meta.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("step " << i);
    CHECK(meta[i].start_bytes == cpu[i].start_bytes);
    CHECK(meta[i].peak_bytes == cpu[i].peak_bytes);
    CHECK(meta[i].activation_bytes == cpu[i].activation_bytes);
    CHECK(meta[i].allocation_sizes.size() == cpu[i].allocation_sizes.size());
    if (meta[i].allocation_sizes != cpu[i].allocation_sizes) {
      size_t n = std::min(meta[i].allocation_sizes.size(), cpu[i].allocation_sizes.size()), j = 0;
      while (j < n && meta[i].allocation_sizes[j] == cpu[i].allocation_sizes[j]) ++j;
      std::ostringstream where;
      auto ops = [](const std::vector<MemoryEvent>& t) {
        std::vector<std::string> v;
        for (const MemoryEvent& e : t)
          if (!e.relabel && e.delta > 0) v.push_back(e.op + " " + std::to_string(e.delta) + " (" + e.phase + ")");
        return v;
      };
      std::vector<std::string> c = ops(cpu[i].timeline), m = ops(meta[i].timeline);
      for (size_t k = j; k < j + 4 && k < n; ++k) where << "\n  cpu: " << c[k] << "  meta: " << m[k];
      FAIL("allocation sequences differ first at allocation " << j << where.str());
    }
    CHECK(meta[i].checkpoint.total.flops_recomputed == cpu[i].checkpoint.total.flops_recomputed);
  }
}

}  // namespace

TEST_CASE("dry run: every strategy's Meta step matches the CPU step to the byte (tiny GPT)", "[dry_run]") {
  for (const Strategy& s : all_strategies()) check_dry_run_matches(s, kTiny, 2);
}

TEST_CASE("dry run: with the fused attention (--attention sdpa), every strategy matches too", "[dry_run][flash]") {
  for (const Strategy& s : all_strategies()) check_dry_run_matches(s, kActivationBound, 2, SDPBackend::FLASH_ATTENTION);
}

TEST_CASE("dry run: every strategy matches where activations decide the peak", "[dry_run]") {
  for (const Strategy& s : all_strategies()) {
    check_dry_run_matches(s, kActivationBound, 2);
  }
  // The config is what its name says: activations are most of the peak without checkpointing.
  std::vector<StepRecord> none = run_training_steps(all_strategies()[0], kActivationBound, Device{kMeta}, 1);
  CHECK(none[0].activation_bytes > none[0].peak_bytes / 2);
}

TEST_CASE("dry run: every strategy matches at the benchmark's config A", "[dry_run]") {
#if defined(__SANITIZE_ADDRESS__)
  const int64_t steps = 1;  // ASan runs config A's CPU steps ten times slower: one step each there
#else
  const int64_t steps = 2;
#endif
  for (const Strategy& s : all_strategies()) check_dry_run_matches(s, kConfigA, steps);
}

TEST_CASE("dry run: a GPT-2-XL-shaped step runs on Meta, predicting more memory than this machine has", "[dry_run]") {
  // 48 layers, d_model 1600, 25 heads, seq 1024, batch 4, vocab 50257: 1.56e9 parameters.
  const ModelShape xl{4, 1024, 1600, 25, 50257, 48};
  reset_peak_memory_stats(Device{kCPU});
  const int64_t cpu_before = memory_allocated(Device{kCPU});
  std::vector<StepRecord> r = run_training_steps(all_strategies()[0], xl, Device{kMeta}, 1);
  const int64_t params = 4 * (50257LL * 1600 + 1024LL * 1600 + 48 * (12LL * 1600 * 1600 + 13LL * 1600) + 2 * 1600);
  CHECK(r[0].at_peak[MemoryCategory::Parameter] == params);
  CHECK(params > 6'000'000'000LL);
  CHECK(r[0].peak_bytes > 24'000'000'000LL);
  CHECK(max_memory_allocated(Device{kCPU}) - cpu_before < (64 << 20));  // nothing of that size on the host
  CHECK(memory_allocated(Device{kMeta}) == 0);  // everything it made is gone
}

TEST_CASE("dry run: ops that need values throw on Meta, naming themselves", "[dry_run]") {
  Tensor m = empty({2, 3}, Device{kMeta});
  REQUIRE_THROWS_WITH(m.to_vector(), Catch::Contains("to_vector: a meta tensor (shape [2, 3]) has no values"));
  REQUIRE_THROWS_WITH(empty({}, Device{kMeta}).item(), Catch::Contains("item: a meta tensor (shape []) has no value"));
  REQUIRE_THROWS_WITH(equal(m, m), Catch::Contains("equal: a meta tensor (shape [2, 3]) has no values to compare"));
  REQUIRE_THROWS_WITH(allclose(m, m), Catch::Contains("allclose: a meta tensor (shape [2, 3]) has no values"));
  REQUIRE_THROWS_WITH(m.to(Device{kCPU}), Catch::Contains("aten::_to_copy"));
  CheckpointOptions o;
  o.determinism_check = "checksum";
  Tensor x = empty({4}, TensorOptions().device(kMeta).requires_grad(true));
  REQUIRE_THROWS_WITH(checkpoint([](const Tensor& h) { return sin(h); }, x, o),
                      Catch::Contains("determinism_check='checksum' needs values") && Catch::Contains("Meta device"));
}

TEST_CASE("training session: interleaved steps train each model as it would train alone", "[training]") {
  const std::vector<Strategy> pair = {select_strategies("none").at(0), select_strategies("full").at(0)};
  std::vector<StepRecord> alone = run_training_steps(pair[1], kTiny, Device{kCPU}, 3);
  // Stepping two sessions in turn: the second still computes exactly what it computes alone.
  TrainingSession a(pair[0], kTiny, Device{kCPU}), b(pair[1], kTiny, Device{kCPU});
  for (int step = 0; step < 3; ++step) {
    a.step();
    CHECK(b.step().loss == alone[static_cast<size_t>(step)].loss);
  }
  std::vector<std::vector<double>> seconds = interleaved_step_seconds(pair, kTiny, Device{kCPU}, 3, 1);
  REQUIRE(seconds.size() == 2);
  for (const std::vector<double>& s : seconds) {
    CHECK(s.size() == 3);  // the warm-up round left out
    for (double t : s) CHECK(t > 0);
  }
  REQUIRE_THROWS_WITH(interleaved_step_seconds(pair, kTiny, Device{kCPU}, 0, 1),
                      Catch::Matchers::Contains("interleaved_step_seconds: expected rounds >= 1 and warmup >= 0, got 0 and 1"));
}

TEST_CASE("dry run: every Llama strategy's Meta step matches the CPU step to the byte (tiny GQA Llama)", "[dry_run]") {
  ModelShape llama{2, 8, 32, 4, 11, 2};
  llama.model = "llama";
  llama.kv_heads = 2;    // grouped-query attention: repeat_kv's copies
  llama.ffn_hidden = 48;
  for (const Strategy& s : all_strategies("llama")) check_dry_run_matches(s, llama, 2);
}

TEST_CASE("the benchmark's Llama is torchtitan's, sized by the shape", "[bench]") {
  ModelShape shape{2, 8, 32, 4, 11, 3};
  shape.model = "llama";
  shape.kv_heads = 2;
  nn::LlamaConfig c = llama_config(shape, kBFloat16, Device{kMeta});
  CHECK(c.dim == 32);
  CHECK(c.n_layers == 3);
  CHECK(c.kv_heads() == 2);
  CHECK(c.vocab_size == 11);
  CHECK(c.max_seq_len == 8);
  CHECK(c.ffn_hidden_dim() == 256);  // torchtitan's rule: int(2 * 128 / 3) = 85, up to a multiple of 256
  CHECK(c.options.dtype() == kBFloat16);
  shape.model = "bert";
  CHECK_THROWS_WITH(run_training_steps(all_strategies().at(0), shape, Device{kMeta}, 1),
                    "the benchmark's model must be gpt or llama, got 'bert'");
}

TEST_CASE("forward_matmul_flops: 2mnk per matmul, the GPT's and the Llama's", "[bench]") {
  // B 1, T 2, C 4, one head, vocab 5, one layer: per layer 2BTC * widths + 2 * 2BT^2C; the head 2BTCV.
  const ModelShape gpt{1, 2, 4, 1, 5, 1};
  CHECK(forward_matmul_flops(gpt, true) == 2 * 2 * 4 * 48 + 4 * 4 * 4);  // widths 3C + C + 4C + 4C = 48
  CHECK(forward_matmul_flops(gpt, false) == forward_matmul_flops(gpt, true) + 2 * 2 * 4 * 5);
  ModelShape llama = gpt;
  llama.model = "llama";
  llama.ffn_hidden = 6;
  CHECK(forward_matmul_flops(llama, true) == 2 * 2 * 4 * 34 + 4 * 4 * 4);  // widths 2C + 2C (kv) + 3F = 34
}
