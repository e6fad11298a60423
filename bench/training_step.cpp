// The benchmark's training step on any device (see training_step.h).
#include "bench/training_step.h"

#include <functional>
#include <limits>
#include <memory>

#include "engine/core/clock.h"
#include "nn/optim/adamw.h"

namespace remat::bench {

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

nn::LlamaConfig llama_config(const ModelShape& shape, ScalarType dtype, Device device) {
  nn::LlamaConfig cfg = nn::LlamaConfig::debugmodel();  // rope theta 500000 and scaling, as llama3_8b's
  cfg.dim = shape.embd;
  cfg.n_layers = shape.layers;
  cfg.n_heads = shape.heads;
  cfg.n_kv_heads = shape.kv_heads;
  cfg.vocab_size = shape.vocab;
  cfg.ffn_hidden = shape.ffn_hidden;
  cfg.max_seq_len = shape.seq;
  cfg.seed = 1337;
  cfg.options = TensorOptions().dtype(dtype).device(device);
  return cfg;
}

// The matmul FLOPs of one forward (2mnk each).
double forward_matmul_flops(const ModelShape& m, bool blocks_only) {
  const double B = static_cast<double>(m.batch), T = static_cast<double>(m.seq), C = static_cast<double>(m.embd);
  // GPT: qkv (3C), proj (C), fc1 and fc2 (4C each); Llama: wq and wo (C), wk and wv (C * kv/heads),
  // w1, w3 and w2 (the hidden size F each). Both: q k^T and scores x V (2 T C each).
  double widths = 3 * C + C + 4 * C + 4 * C;
  if (m.is_llama()) {
    const double kv = C * static_cast<double>(m.kv_heads_or_heads()) / static_cast<double>(m.heads);
    const double F = static_cast<double>(llama_config(m, kFloat, Device{kMeta}).ffn_hidden_dim());
    widths = 2 * C + 2 * kv + 3 * F;
  }
  const double per_layer = 2 * B * T * C * widths + 2 * 2 * B * T * T * C;
  const double head = 2 * B * T * C * static_cast<double>(m.vocab);
  return static_cast<double>(m.layers) * per_layer + (blocks_only ? 0 : head);
}

namespace {
// The model of `shape` under the session's options: a module (its parameters) and its loss.
struct BenchModel {
  std::shared_ptr<nn::Module> module;
  // (tokens, targets) -> (logits, loss). The step holds both to its end: nanoGPT's loop keeps the
  // GPT's logits through backward; the Llama's are undefined, freed before it as torchtitan does.
  std::function<std::pair<Tensor, Tensor>(const Tensor&, const Tensor&)> forward;
};

BenchModel make_model(const ModelShape& shape, Device device, const TrainingOptions& o,
                      const nn::ActivationCheckpointing& checkpointing) {
  if (shape.is_llama()) {
    nn::LlamaConfig cfg = llama_config(shape, o.dtype, device);
    cfg.sdpa_backend = o.attention;
    auto llama = std::make_shared<nn::Llama>(cfg);
    llama->set_checkpointing(checkpointing);
    // torchtitan's train step frees the logits before backward ("del pred ... to avoid peaking memory").
    return {llama, [llama](const Tensor& x, const Tensor& y) { return std::make_pair(Tensor(), llama->forward(x, y).loss); }};
  }
  REMAT_CHECK(shape.model == "gpt", "the benchmark's model must be gpt or llama, got '", shape.model, "'");
  nn::GPTConfig cfg = gpt_config(shape, o.dtype, device);
  cfg.sdpa_backend = o.attention;
  auto gpt = std::make_shared<nn::GPT>(cfg);
  gpt->set_checkpointing(checkpointing);
  return {gpt, [gpt](const Tensor& x, const Tensor& y) {
            nn::GPTOutput out = gpt->forward(x, y);
            return std::make_pair(out.logits, out.loss);
          }};
}
}  // namespace

struct TrainingSession::State {
  Device device;
  TrainingOptions options;
  std::pair<Tensor, Tensor> batch;  // (idx, targets), made first as a training loop would
  BenchModel model;
  optim::AdamW opt;
  int64_t steps = 0;
  State(const Strategy& strategy, const ModelShape& shape, Device d, const TrainingOptions& o)
      : device(d), options(o), batch(token_batch(shape, d, o.data_seed)),
        model(make_model(shape, d, o, strategy.checkpointing)),
        opt(model.module->parameters(), optim::AdamWOptions(o.lr).fused(o.fused_adamw)) {}
};

TrainingSession::TrainingSession(const Strategy& strategy, const ModelShape& shape, Device device,
                                 const TrainingOptions& options)
    : state_(std::make_unique<State>(strategy, shape, device, options)) {}
TrainingSession::~TrainingSession() = default;

StepRecord TrainingSession::step() {
  State& s = *state_;
  const Device device = s.device;
  if (s.options.on_step) s.options.on_step(s.steps);
  ++s.steps;
  StepRecord r;
  s.model.module->zero_grad();
  reset_checkpoint_stats();
  reset_peak_memory_stats(device);
  r.start_bytes = memory_allocated(device);
  Tensor loss;
  const Clock clock = s.options.cpu_clock ? Clock::kProcessCpu : Clock::kWall;
  const double t0 = now_seconds(clock);
  {
    // Counts only unless the timeline is asked for: its strings are no part of a step's time.
    MemoryTracker tracker(device, s.options.keep_timeline ? MemoryTracker::Keep::kTimeline : MemoryTracker::Keep::kCounts);
    r.start_by_category = tracker.current();
    auto [logits, step_loss] = s.model.forward(s.batch.first, s.batch.second);
    r.activation_bytes = memory_allocated(device) - r.start_bytes;
    step_loss.backward();
    s.opt.step();
    loss = step_loss;
    r.allocation_sizes = tracker.allocation_sizes();
    r.at_peak = tracker.at_peak();
    if (s.options.keep_timeline) r.timeline = tracker.timeline();
  }
  // The step's memory before the loss is read: item() may allocate (a CPU scalar converted to
  // double), which Meta never does, and a step whose peak is its end (the optimizer's states made)
  // would count it.
  r.peak_bytes = max_memory_allocated(device);
  r.peak_reserved_bytes = max_memory_reserved(device);
  r.segments = memory_segments(device);
  // After the tracker: reading a value copies it to the host (and Meta has none).
  r.loss = device.is_meta() ? std::numeric_limits<double>::quiet_NaN() : loss.item();
  r.seconds = now_seconds(clock) - t0;
  r.checkpoint = checkpoint_stats();
  return r;
}

std::vector<StepRecord> run_training_steps(const Strategy& strategy, const ModelShape& shape, Device device,
                                           int64_t steps, const TrainingOptions& options) {
  // A CUDA run starts from an empty cache, as its dry run does (the reserved bytes are compared).
  if (device.is_cuda()) empty_cache(device);
  TrainingSession session(strategy, shape, device, options);
  std::vector<StepRecord> records;
  for (int64_t step = 0; step < steps; ++step) records.push_back(session.step());
  return records;
}

std::vector<std::vector<double>> interleaved_step_seconds(const std::vector<Strategy>& strategies,
                                                          const ModelShape& shape, Device device, int64_t rounds,
                                                          int64_t warmup, const TrainingOptions& options,
                                                          const std::function<void(size_t, bool)>& after_step) {
  REMAT_CHECK(rounds >= 1 && warmup >= 0, "interleaved_step_seconds: expected rounds >= 1 and warmup >= 0, got ",
              rounds, " and ", warmup);
  TrainingOptions o = options;
  o.keep_timeline = false;
  o.on_step = nullptr;
  std::vector<std::unique_ptr<TrainingSession>> sessions;
  for (const Strategy& s : strategies) sessions.push_back(std::make_unique<TrainingSession>(s, shape, device, o));
  std::vector<std::vector<double>> seconds(strategies.size());
  for (int64_t round = 0; round < warmup + rounds; ++round) {
    for (size_t k = 0; k < sessions.size(); ++k) {
      const size_t i = round % 2 == 0 ? k : sessions.size() - 1 - k;
      const double t = sessions[i]->step().seconds;
      if (round >= warmup) seconds[i].push_back(t);
      if (after_step) after_step(i, round >= warmup);
    }
  }
  return seconds;
}

}  // namespace remat::bench
