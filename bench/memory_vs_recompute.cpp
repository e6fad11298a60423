// What each activation-checkpointing strategy costs: trains a small GPT under each one and
// reports peak and activation memory (remat's allocator statistics) against the analytic
// prediction, the median step time and its overhead against no checkpointing, the FLOPs
// recomputed and the op calls replayed from the selective-checkpoint cache, and the final loss.
//
//   ./bazelw run //bench:memory_vs_recompute
//   ./bazelw run //bench:memory_vs_recompute -- --strategies none,full,sac-mm --out /tmp/mvr
//   ./bazelw run //bench:memory_vs_recompute -- --compare /tmp/torch.json   (bench/torch_reference.py)
//   ./bazelw run //bench:memory_vs_recompute -- --compare /tmp/torch2.json,/tmp/torch113.json
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <omp.h>
#include <sys/stat.h>
#include <time.h>

#include "bench/activation_model.h"
#include "bench/report.h"
#include "bench/strategies.h"
#include "nn/optim/adamw.h"
#include "remat.h"

using namespace remat;
using namespace remat::bench;

namespace {

struct Args {
  ModelShape shape{8, 128, 256, 4, 65, 4};
  int64_t steps = 5, warmup = 2;
  std::string device = "cpu", dtype = "f32", strategies, out, compare;
  double lr = 1e-3;
  bool timeline = true;
  // "wall", or "cpu": the process's CPU time per step (CLOCK_PROCESS_CPUTIME_ID), which time
  // slices given to other processes do not inflate (use it with OMP_NUM_THREADS=1 on a busy
  // machine; with more threads it also counts the OpenMP threads' spin-waiting).
  std::string clock = "wall";
  bool fused_adamw = true;  // --optimizer adamw-fused (default) or adamw (the single-tensor op sequence)
};

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "error: %s\n\n", error.c_str());
  std::fprintf(stderr,
               "usage: memory_vs_recompute [--layers N] [--embd N] [--heads N] [--seq N] [--batch N] [--vocab N]\n"
               "                           [--steps N] [--warmup N] [--device cpu|cuda] [--dtype f32|bf16]\n"
               "                           [--strategies a,b,...] [--out DIR] [--compare FILE[,FILE...]] [--lr X]\n"
               "                           [--no-timeline] [--clock wall|cpu]\n"
               "                           [--optimizer adamw-fused|adamw]\n"
               "strategies: none, full, full-reentrant, every2, sac-mm, sac-titan, sac-no-fc2, sac-megatron\n");
  std::exit(error.empty() ? 0 : 2);
}

int64_t parse_int(const std::string& flag, const std::string& v, int64_t min) {
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || x < min) usage(flag + " expects an integer >= " + std::to_string(min) + ", got '" + v + "'");
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    if (f == "--help" || f == "-h") usage("");
    if (f == "--no-timeline") {
      a.timeline = false;
      continue;
    }
    if (i + 1 >= argc) usage("missing value for " + f);
    std::string v = argv[++i];
    if (f == "--layers") a.shape.layers = parse_int(f, v, 1);
    else if (f == "--embd") a.shape.embd = parse_int(f, v, 1);
    else if (f == "--heads") a.shape.heads = parse_int(f, v, 1);
    else if (f == "--seq") a.shape.seq = parse_int(f, v, 1);
    else if (f == "--batch") a.shape.batch = parse_int(f, v, 1);
    else if (f == "--vocab") a.shape.vocab = parse_int(f, v, 2);
    else if (f == "--steps") a.steps = parse_int(f, v, 1);
    else if (f == "--warmup") a.warmup = parse_int(f, v, 0);
    else if (f == "--device") a.device = v;
    else if (f == "--dtype") a.dtype = v;
    else if (f == "--strategies") a.strategies = v;
    else if (f == "--out") a.out = v;
    else if (f == "--compare") a.compare = v;
    else if (f == "--lr") a.lr = std::atof(v.c_str());
    else if (f == "--clock") a.clock = v;
    else if (f == "--optimizer") {
      if (v != "adamw" && v != "adamw-fused") usage("--optimizer must be adamw or adamw-fused, got '" + v + "'");
      a.fused_adamw = v == "adamw-fused";
    }
    else usage("unknown flag " + f);
  }
  if (a.device != "cpu" && a.device != "cuda") usage("--device must be cpu or cuda, got '" + a.device + "'");
  if (a.clock != "wall" && a.clock != "cpu") usage("--clock must be wall or cpu, got '" + a.clock + "'");
  if (a.dtype != "f32" && a.dtype != "bf16") usage("--dtype must be f32 or bf16, got '" + a.dtype + "'");
  if (a.shape.embd % a.shape.heads != 0) usage("--embd must be divisible by --heads");
  a.shape.bytes_per_element = a.dtype == "bf16" ? 2 : 4;
  return a;
}

void progress(const std::string& strategy, size_t index, size_t total, int64_t step, int64_t steps) {
  const int width = 30;
  double done = (static_cast<double>(index) + static_cast<double>(step) / static_cast<double>(steps)) / static_cast<double>(total);
  int filled = static_cast<int>(done * width);
  std::fprintf(stderr, "\r[%s%s] %3.0f%%  %-14s step %lld/%lld   ", std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), '.').c_str(), done * 100.0, strategy.c_str(),
               (long long)step, (long long)steps);
  std::fflush(stderr);
}

// Records allocated bytes after every op call (one step's timeline).
class TimelineMode : public DispatchMode {
 public:
  explicit TimelineMode(Device d) : device_(d) {}
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    std::vector<IValue> out = op.call(args);
    points.push_back(memory_allocated(device_));
    return out;
  }
  std::vector<int64_t> points;

 private:
  Device device_;
};

// Milliseconds on the chosen clock (see Args::clock).
double now_ms(const std::string& clock) {
  if (clock == "cpu") {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double forward_matmul_flops(const ModelShape& m, bool blocks_only) {
  const double B = static_cast<double>(m.batch), T = static_cast<double>(m.seq), C = static_cast<double>(m.embd);
  const double per_layer = 2 * B * T * C * (3 * C + C + 4 * C + 4 * C) + 2 * 2 * B * T * T * C;
  const double head = 2 * B * T * C * static_cast<double>(m.vocab);
  return static_cast<double>(m.layers) * per_layer + (blocks_only ? 0 : head);
}

StrategyResult run(const Strategy& s, const Args& a, size_t index, size_t total, const Tensor& idx, const Tensor& targets,
                   Device device) {
  nn::GPTConfig cfg;
  cfg.vocab_size = a.shape.vocab;
  cfg.block_size = a.shape.seq;
  cfg.n_layer = a.shape.layers;
  cfg.n_head = a.shape.heads;
  cfg.n_embd = a.shape.embd;
  cfg.seed = 1337;
  nn::GPT model(cfg);
  if (a.dtype == "bf16") model.to(kBFloat16);
  if (!device.is_cpu()) model.to(device);
  model.set_checkpointing(s.checkpointing);
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(a.lr).fused(a.fused_adamw));

  StrategyResult r;
  r.name = s.name;
  r.description = s.description;
  r.reentrant = s.reentrant;
  r.predicted_bytes = predicted_activation_bytes(s.name, a.shape);
  const int64_t total_steps = a.warmup + a.steps;
  for (int64_t step = 0; step < total_steps; ++step) {
    progress(s.name, index, total, step, total_steps);
    model.zero_grad();
    if (step == a.warmup) reset_checkpoint_stats();
    reset_peak_memory_stats(device);
    const int64_t before = memory_allocated(device);
    const double t0 = now_ms(a.clock);
    nn::GPTOutput out = model.forward(idx, targets);
    const int64_t activations = memory_allocated(device) - before;
    out.loss.backward();
    opt.step();
    double loss = out.loss.item();  // also waits for the device
    const double t1 = now_ms(a.clock);
    if (step >= a.warmup) {
      r.step_ms.push_back(t1 - t0);
      r.activation_bytes = std::max(r.activation_bytes, activations);
      r.peak_bytes = std::max(r.peak_bytes, max_memory_allocated(device));
    }
    r.final_loss = loss;
  }
  CheckpointStats stats = checkpoint_stats();
  r.recomputed_flops_per_step = stats.total.flops_recomputed / static_cast<double>(a.steps);
  r.replayed_per_step = static_cast<double>(stats.total.ops_replayed) / static_cast<double>(a.steps);
  r.recomputed_calls_per_step = static_cast<double>(stats.total.ops_recomputed) / static_cast<double>(a.steps);
  std::vector<double> sorted = r.step_ms;
  std::sort(sorted.begin(), sorted.end());
  r.median_ms = sorted[sorted.size() / 2];
  if (a.timeline) {
    // One more step, untimed, with every op call's allocated bytes recorded.
    model.zero_grad();
    auto mode = std::make_shared<TimelineMode>(device);
    {
      DispatchModeGuard g(mode);
      nn::GPTOutput out = model.forward(idx, targets);
      out.loss.backward();
    }
    r.timeline = std::move(mode->points);
  }
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REMAT_CHECK(in.good(), "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  REMAT_CHECK(out.good(), "cannot write ", path);
  out << text;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    Device device = a.device == "cuda" ? Device{kCUDA} : Device{kCPU};
    if (device.is_cuda() && !cuda_is_available()) {  // engine/core/cuda_hooks.h
      std::fprintf(stderr, "error: --device cuda, but no CUDA device is available (or remat was built without CUDA)\n");
      return 2;
    }
    std::vector<Strategy> strategies = a.strategies.empty() ? all_strategies() : select_strategies(a.strategies);
    Generator data_gen(42);
    Tensor tokens = (rand({a.shape.batch, a.shape.seq + 1}, TensorOptions(), &data_gen) * static_cast<double>(a.shape.vocab))
                        .to(kLong);  // uniform token ids, fixed seed
    Tensor idx = tokens.slice(1, 0, a.shape.seq).contiguous().to(device);
    Tensor targets = tokens.slice(1, 1, a.shape.seq + 1).contiguous().to(device);

    RunConfig cfg;
    cfg.shape = a.shape;
    cfg.device = a.device;
    cfg.dtype = a.dtype;
    cfg.steps = a.steps;
    cfg.warmup = a.warmup;
    cfg.forward_flops = forward_matmul_flops(a.shape, true);
    cfg.model_flops_per_step = 3 * forward_matmul_flops(a.shape, false);
    cfg.threads = omp_get_max_threads();
    cfg.clock = a.clock;

    std::vector<StrategyResult> results;
    for (size_t i = 0; i < strategies.size(); ++i) results.push_back(run(strategies[i], a, i, strategies.size(), idx, targets, device));
    std::fprintf(stderr, "\r%80s\r", "");
    print_table(cfg, results);

    if (!a.out.empty()) {
      mkdir(a.out.c_str(), 0755);
      write_file(a.out + "/results.json", to_json(cfg, results));
      write_file(a.out + "/memory_vs_time.svg", pareto_svg(cfg, results));
      for (const StrategyResult& r : results)
        if (!r.timeline.empty()) write_file(a.out + "/timeline_" + r.name + ".svg", timeline_svg(cfg, r));
      std::printf("wrote %s/results.json, %s/memory_vs_time.svg and %s/timeline_<strategy>.svg\n", a.out.c_str(),
                  a.out.c_str(), a.out.c_str());
    }
    // One comparison per file (e.g. PyTorch 2.x and 1.13 runs of bench/torch_reference.py).
    std::stringstream files(a.compare);
    std::string file;
    while (std::getline(files, file, ',')) {
      if (file.empty()) continue;
      RunConfig other_cfg;
      std::vector<StrategyResult> other;
      from_json(read_file(file), &other_cfg, &other);
      print_comparison(cfg, results, other_cfg, other);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  }
  return 0;
}
