// The benchmark's training step (no PyTorch counterpart: the loop of nanoGPT's train.py), on any
// device. On Device{kMeta} it is a dry run: the same ops, allocations and frees in the same
// order as on the CPU, no kernel, and memory_allocated(Device{kMeta}) reports what the CPU would
// (torch's FakeTensorMode + MemTracker, exact rather than estimated).
//
//   StepRecord cpu = run_training_steps(strategy, shape, Device{kCPU}, 2)[1];
//   StepRecord meta = run_training_steps(strategy, shape, Device{kMeta}, 2)[1];
//   cpu.peak_bytes == meta.peak_bytes;   cpu.allocation_sizes == meta.allocation_sizes;
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "bench/activation_model.h"
#include "bench/strategies.h"
#include "remat.h"

namespace remat::bench {

// One training step's memory, as the device's allocator counted it.
struct StepRecord {
  int64_t start_bytes = 0;       // memory_allocated when the step began
  int64_t peak_bytes = 0;        // max_memory_allocated over the step (counted from zero, as torch does)
  int64_t peak_reserved_bytes = 0;  // max_memory_reserved over the step (the cache carried from earlier steps included)
  int64_t segments = 0;             // memory_segments after the step
  int64_t activation_bytes = 0;  // allocated after forward minus allocated before it
  std::vector<int64_t> allocation_sizes;      // every allocation of the step, in order
  std::vector<MemoryEvent> timeline;          // the tracker's events (when asked for)
  std::map<MemoryCategory, int64_t> start_by_category;  // live bytes by category when the step began
  std::map<MemoryCategory, int64_t> at_peak;  // bytes by category at the peak
  CheckpointStats checkpoint;                 // the step's recompute accounting
  double loss = 0;                            // NaN on Meta
  double seconds = 0;  // from forward to the loss read back (which waits for the device); see cpu_clock
};

struct TrainingOptions {
  ScalarType dtype = kFloat;
  double lr = 1e-3;
  bool keep_timeline = false;  // fill StepRecord::timeline
  bool fused_adamw = true;     // AdamWOptions::fused (one _fused_adamw_ per parameter)
  SDPBackend attention = SDPBackend::MATH;  // GPTConfig::sdpa_backend (--attention math|sdpa)
  // StepRecord::seconds on the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) instead of the wall
  // clock: time slices given to other processes do not count (with one thread, on a busy machine).
  bool cpu_clock = false;
  uint64_t data_seed = 42;
  std::function<void(int64_t step)> on_step;  // called before each step (a progress bar)
};

// One model (the GPT or Llama of `shape` under `strategy`), its AdamW and the token batch on `device`,
// stepped one training step at a time: what run_training_steps loops over, and what
// interleaved_step_seconds alternates between.
class TrainingSession {
 public:
  TrainingSession(const Strategy& strategy, const ModelShape& shape, Device device, const TrainingOptions& options = {});
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;
  StepRecord step();  // one training step; options.on_step is called with its index first

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Builds the model of `shape` directly on `device` (no host copy: a GPT-2-XL-sized model dry-runs
// without its 6 GB of weights), AdamW and the token batch, and runs `steps` training steps under
// `strategy`.
std::vector<StepRecord> run_training_steps(const Strategy& strategy, const ModelShape& shape, Device device,
                                           int64_t steps, const TrainingOptions& options = {});

// The step times, in seconds, of several strategies measured alternately: `warmup` rounds, then
// `rounds` rounds of one step of each (in reverse order every other round), so that a slow spell
// of a shared machine hits all of them alike. All the sessions are alive at once: this times
// steps only (a step's peak, counted from zero, would include the other models). `after_step`, when
// given, is called after each step with the strategy's index and whether the step was timed (not
// warm-up): `memory_vs_recompute --beside` has PyTorch take its step of the same strategy there.
std::vector<std::vector<double>> interleaved_step_seconds(
    const std::vector<Strategy>& strategies, const ModelShape& shape, Device device, int64_t rounds, int64_t warmup,
    const TrainingOptions& options = {}, const std::function<void(size_t strategy, bool timed)>& after_step = nullptr);

// The model configuration the benchmark uses for `shape` (ModelShape::model "gpt" or "llama").
nn::GPTConfig gpt_config(const ModelShape& shape, ScalarType dtype, Device device);
nn::LlamaConfig llama_config(const ModelShape& shape, ScalarType dtype, Device device);
// The matmul FLOPs of one forward of the model (2mnk per matmul), the blocks' only or with the
// output projection.
double forward_matmul_flops(const ModelShape& shape, bool blocks_only);
// The benchmark's token batch: uniform ids from a fixed seed on the CPU; shape-only on Meta.
std::pair<Tensor, Tensor> token_batch(const ModelShape& shape, Device device, uint64_t seed = 42);

}  // namespace remat::bench
