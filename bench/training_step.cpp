// The benchmark's training step on any device (see training_step.h).
#include "bench/training_step.h"

#include <chrono>
#include <limits>
#include <memory>
#include <time.h>

#include "nn/optim/adamw.h"

namespace remat::bench {

namespace {
// Seconds on the wall clock, or on the process's CPU clock (TrainingOptions::cpu_clock).
double now_seconds(bool cpu_clock) {
  if (cpu_clock) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

nn::GPTConfig gpt_config(const ModelShape& shape, ScalarType dtype, Device device) {
  nn::GPTConfig cfg;
  cfg.vocab_size = shape.vocab;
  cfg.block_size = shape.seq;
  cfg.n_layer = shape.layers;
  cfg.n_head = shape.heads;
  cfg.n_embd = shape.embd;
  cfg.seed = 1337;
  cfg.options = TensorOptions().dtype(dtype).device(device);
  return cfg;
}

std::pair<Tensor, Tensor> token_batch(const ModelShape& shape, Device device, uint64_t seed) {
  if (device.is_meta()) {
    TensorOptions o = TensorOptions().dtype(kLong).device(device);
    return {empty({shape.batch, shape.seq}, o), empty({shape.batch, shape.seq}, o)};
  }
  Generator gen(seed);
  Tensor tokens = (rand({shape.batch, shape.seq + 1}, TensorOptions(), &gen) * static_cast<double>(shape.vocab)).to(kLong);
  Tensor idx = tokens.slice(1, 0, shape.seq).contiguous().to(device);
  Tensor targets = tokens.slice(1, 1, shape.seq + 1).contiguous().to(device);
  return {idx, targets};
}

std::vector<StepRecord> run_training_steps(const Strategy& strategy, const ModelShape& shape, Device device,
                                           int64_t steps, const TrainingOptions& options) {
  auto [idx, targets] = token_batch(shape, device, options.data_seed);
  nn::GPTConfig cfg = gpt_config(shape, options.dtype, device);
  cfg.sdpa_backend = options.attention;
  nn::GPT model(cfg);
  model.set_checkpointing(strategy.checkpointing);
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(options.lr).fused(options.fused_adamw));

  std::vector<StepRecord> records;
  for (int64_t step = 0; step < steps; ++step) {
    if (options.on_step) options.on_step(step);
    StepRecord r;
    model.zero_grad();
    reset_checkpoint_stats();
    reset_peak_memory_stats(device);
    r.start_bytes = memory_allocated(device);
    Tensor loss;
    const double t0 = now_seconds(options.cpu_clock);
    {
      MemoryTracker tracker(device);
      r.start_by_category = tracker.current();
      nn::GPTOutput out = model.forward(idx, targets);
      r.activation_bytes = memory_allocated(device) - r.start_bytes;
      out.loss.backward();
      opt.step();
      loss = out.loss;
      r.allocation_sizes = tracker.allocation_sizes();
      r.at_peak = tracker.at_peak();
      if (options.keep_timeline) r.timeline = tracker.timeline();
    }
    // After the tracker: reading a value copies it to the host (and Meta has none).
    r.loss = device.is_meta() ? std::numeric_limits<double>::quiet_NaN() : loss.item();
    r.seconds = now_seconds(options.cpu_clock) - t0;
    r.peak_bytes = max_memory_allocated(device);
    r.checkpoint = checkpoint_stats();
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace remat::bench
