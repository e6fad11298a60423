// What each activation-checkpointing strategy costs: first predicts each strategy's memory with
// a dry run on the Meta device (the same training steps, no kernels), then trains a small GPT
// under it and reports measured beside predicted peak and activation memory (remat's allocator
// statistics; the ratios read 1.000), the median step time and its overhead against no
// checkpointing, the FLOPs recomputed, the op calls replayed from the selective-checkpoint cache
// and the final loss. `--dry-run` predicts only, for a model of any size. `--budget SIZE` adds the
// strategy plan_checkpointing makes for that budget (a `planned` row: does it fit?); `--sweep N`
// plans N budgets across the feasible range, runs each and draws the planned frontier beside the
// fixed strategies; `--sweep-at-strategies` plans at each strategy's own peak and compares.
// `--sweep N --export-plan DIR`, torch_reference.py --plan DIR, `--compare`: docs/pytorch.md.
// `--device cuda --offload SIZE --sweep N` plans each budget twice, without and with SIZE of pinned
// host memory to offload to, and draws the keep/recompute/offload frontier beside the
// keep/recompute one with each plan's modeled step cost (recompute plus exposed transfer; with
// --dry-run too, since those costs are modeled either way).
//
//   ./bazelw run //bench:memory_vs_recompute
//   ./bazelw run //bench:memory_vs_recompute -- --strategies none,full,sac-mm --out /tmp/mvr
//   ./bazelw run //bench:memory_vs_recompute -- --dry-run --layers 48 --embd 1600 --heads 25 --seq 1024 --vocab 50257
//   ./bazelw run //bench:memory_vs_recompute -- --compare /tmp/torch.json   (bench/torch_reference.py)
//   ./bazelw run //bench:memory_vs_recompute -- --compare /tmp/torch2.json,/tmp/torch113.json
//   ./bazelw run //bench:memory_vs_recompute -- --budget 80MiB --sweep 6 --sweep-at-strategies --out /tmp/mvr
//   ./bazelw run --config=cuda_emu //bench:memory_vs_recompute -- --device cuda --dry-run --sweep 4 --offload 64MiB
#include <algorithm>
#include <cmath>
#include <dirent.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/machine_peaks.h"
#include "bench/op_profile.h"
#include "bench/plan_files.h"
#include "bench/peer_process.h"
#include "bench/planning.h"
#include "bench/render/render.h"
#include "bench/step_peer.h"
#include "bench/strategies.h"
#include "bench/training_step.h"
#include "remat.h"

using namespace remat;
using namespace remat::bench;

namespace {

struct Args {
  ModelShape shape{8, 128, 256, 4, 65, 4};
  int64_t steps = 5, warmup = 2;
  std::string device = "cpu", dtype = "f32", strategies, out, compare, meta_accounting;
  std::string attention = "math";  // --attention math|sdpa: the composite, or the fused op (GPTConfig::sdpa_backend)
  double lr = 1e-3;
  bool timeline = true, dry_run = false;
  bool interleave = true;  // --no-interleave: no second timing with every strategy one step in turn
  bool profile_ops = false;  // --profile-ops: each strategy's op calls and their times per timed step
  // "wall", or "cpu": the process's CPU time per step (CLOCK_PROCESS_CPUTIME_ID), which time
  // slices given to other processes do not inflate (use it with OMP_NUM_THREADS=1 on a busy
  // machine; with more threads it also counts the OpenMP threads' spin-waiting).
  std::string clock = "wall";
  bool fused_adamw = true;  // --optimizer adamw-fused (default) or adamw (the single-tensor op sequence)
  PlanningArgs planning;  // --budget, --sweep, --sweep-at-strategies, --estimate, --offload
  std::string estimate;   // --estimate as given ("": benchmark when planning for this run's CPU, else cost-model)
  // --compare's files, read before the run: each one's configuration and results.
  std::vector<std::pair<RunConfig, std::vector<StrategyResult>>> compared;
  std::string llama_config = "debugmodel";  // --config as given (the --beside peer is told it)
  std::string beside;  // --beside COMMAND: PyTorch's step of each strategy in the timing in turn
};

// --compare's files: regular files (a FIFO would never end) of at most this many bytes.
constexpr uint64_t kMaxCompareBytes = 64 << 20;

// Bad usage: one line, exit 2; --help: the flags, exit 0.
[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) {
    std::fprintf(stderr, "error: %s (--help for the flags)\n", error.c_str());
    std::exit(2);
  }
  std::fprintf(stderr,
               "usage: memory_vs_recompute [--model gpt|llama] [--config debugmodel|llama3_8b] [--kv-heads N] [--ffn N]\n"
               "                           [--layers N] [--embd N] [--heads N] [--seq N] [--batch N] [--vocab N]\n"
               "                           [--steps N] [--warmup N] [--device cpu|cuda] [--dtype f32|bf16]\n"
               "                           [--strategies a,b,...] [--out DIR] [--compare FILE[,FILE...]] [--lr X]\n"
               "                           [--no-timeline] [--no-interleave] [--profile-ops] [--dry-run]\n"
               "                           [--meta-accounting cpu|cuda]\n"
               "                           [--clock wall|cpu] [--optimizer adamw-fused|adamw] [--attention math|sdpa]\n"
               "                           [--budget SIZE] [--sweep N] [--sweep-at-strategies]\n"
               "                           [--estimate benchmark|cost-model] [--offload SIZE]\n"
               "                           [--export-plan FILE|DIR] [--plan FILE|DIR] [--beside COMMAND]\n"
               "strategies: none, full, full-reentrant, every2, sac-mm, sac-titan, sac-no-fc2 (llama: sac-no-w2),\n"
               "  sac-megatron; sac-titan is torchtitan's per-op SAC policy (every other mm and the attention output)\n"
               "--model llama: torchtitan's Llama 3 (RMSNorm, rotary, SwiGLU, grouped-query attention; nn/llama.h), with\n"
               "  --embd its dim, --heads its n_heads, --kv-heads N its n_kv_heads and --ffn N its SwiGLU hidden size\n"
               "  (default: torchtitan's rule from 4 * dim); --config NAME sets torchtitan's flavour's sizes (later\n"
               "  flags override them)\n"
               "--dry-run: predict on the Meta device only (nothing computed, any model size); the dry runs\n"
               "  count as --device's allocator does (cuda: 512-byte blocks) unless --meta-accounting says otherwise\n"
               "--lr X: AdamW's learning rate, 0 < X <= 1e6 (default 1e-3); a run whose loss becomes NaN or Inf stops\n"
               "--clock cpu: per-step process CPU time (a busy machine; one thread)\n"
               "--no-interleave: skip the second timing, in which every strategy takes one step in turn (the\n"
               "  fairer overheads on a shared machine; its table follows the main one)\n"
               "--profile-ops: after each strategy's run, its ops by time per timed step (calls, ms, share), as\n"
               "  torch.profiler's key_averages() lists them (bench/torch_reference.py --profile-ops: PyTorch's), with\n"
               "  the bytes each moved at least; on the CPU, the other ops than matrix products against the copy\n"
               "  bandwidth measured after the run (the time their bytes take at it)\n"
               "--attention sdpa: the fused aten::_scaled_dot_product_flash_attention_for_cpu (CPU) or\n"
               "  aten::_scaled_dot_product_efficient_attention (CUDA) (saves output and logsumexp; the SAC\n"
               "  strategies save it) instead of the math composite (default)\n"
               "--budget SIZE (e.g. 60MiB): also the strategy plan_checkpointing makes for that peak (the `planned`\n"
               "  row, with `fits`); the planner's dry runs count as --meta-accounting says\n"
               "--sweep N: plan N budgets evenly spaced from the lowest feasible peak (everything recomputed) to\n"
               "  the highest (everything kept), run each, and draw the planned frontier on the Pareto charts\n"
               "--sweep-at-strategies: plan at each strategy's own measured peak too, and compare step times\n"
               "  (also step by step in turn, paired, so that a slow spell hits both)\n"
               "--estimate: how the planner prices a recomputed op call: benchmark (each distinct call timed on\n"
               "  this machine once; the default when planning for the CPU it runs on) or cost-model (the roofline\n"
               "  on the FMA peak and copy bandwidth measured in this run; the default for --dry-run and cuda)\n"
               "--offload SIZE (e.g. 64MiB; --device cuda, with --sweep N): plan every sweep budget again with SIZE\n"
               "  of pinned host memory to offload to (keep, recompute or offload each op output), and compare the\n"
               "  two frontiers' modeled step costs (recompute + exposed transfer); with --dry-run too. On the\n"
               "  emulated device, or in a dry run, the transfers are modeled, not measured\n"
               "--export-plan FILE (with --budget): write the plan to FILE (docs/plan_format.md); with --dry-run\n"
               "  --device cuda too: a plan for a GPU made without one. With --sweep N (not --budget): a folder\n"
               "  (made if missing; an earlier run's plan_<digits>.json removed), one keep/recompute plan per sweep\n"
               "  budget, DIR/plan_<budget bytes>.json, for bench/torch_reference.py --plan DIR\n"
               "--compare FILE with --sweep N: also a row per sweep budget beside PyTorch's run of the plan\n"
               "  exported for it (matched by budget bytes): predicted and measured activation bytes, step times\n"
               "--plan FILE: train under a saved plan (the `plan-file` row): checked against this model by a dry\n"
               "  run (its regions and calls), its predicted peaks beside the measured ones. With --sweep N: the\n"
               "  folder --sweep N --export-plan DIR wrote, each sweep budget run under its file, not planned again\n"
               "--out DIR: results.json, report.html, memory_vs_time.svg, memory_vs_flops.svg,\n"
               "  timeline_<strategy>.svg and (--offload) memory_vs_modeled_cost.svg\n"
               "--beside COMMAND (say `~/.cache/remat/venv/bin/python bench/torch_reference.py --serve`): in the\n"
               "  timing in turn, PyTorch's step of each strategy (the same model, threads and clock) right after\n"
               "  remat's, so that both sides of each ratio see the same moment of a shared machine; with --budget\n"
               "  (else --plan FILE) the peer applies that plan too (python/remat_plan), beside the planned row;\n"
               "  --sweep N's plans are not (--sweep N --compare FILE: each beside PyTorch's run of its plan)\n");
  std::exit(0);
}

// A flag's integer (engine/core/cli.h), or the usage with its message. (`int min`: preferred over
// remat::parse_int for the calls below.)
int64_t parse_int(const std::string& flag, const std::string& v, int min) {
  try {
    return remat::parse_int(flag, v, min);
  } catch (const Error& e) {
    usage(e.what());
  }
}

// --lr: finite and positive (1e6 is far past any rate that trains; a diverging run stops, naming
// its step).
double parse_lr(const std::string& v) {
  try {
    const double lr = parse_float("--lr", v, 0, 1e6, "a finite number > 0 and <= 1e6");
    if (lr > 0) return lr;
  } catch (const Error&) {
  }
  usage("--lr: expected a finite number > 0 and <= 1e6, got '" + v + "'");
}

// A planning flag's value (bench/planning.h), or the usage with the parser's message.
int64_t planning_value(int64_t (*parse_value)(const std::string&), const std::string& v) {
  try {
    return parse_value(v);
  } catch (const Error& e) {
    usage(e.what());
  }
}

EstimateMode planning_value_mode(const std::string& v) {
  try {
    return parse_estimate(v);
  } catch (const Error& e) {
    usage(e.what());
  }
}

// --config NAME: torchtitan's Llama flavour's sizes (nn::LlamaConfig::named), as if given as
// flags there: later flags override them. It implies --model llama.
void apply_named_config(const std::string& name, ModelShape* shape) {
  nn::LlamaConfig c;
  try {
    c = nn::LlamaConfig::named(name);
  } catch (const Error&) {
    usage("--config must be debugmodel or llama3_8b (torchtitan's Llama 3 flavours), got '" + name + "'");
  }
  shape->model = "llama";
  shape->embd = c.dim;
  shape->layers = c.n_layers;
  shape->heads = c.n_heads;
  shape->kv_heads = c.n_kv_heads;
  shape->vocab = c.vocab_size;
  shape->ffn_hidden = c.ffn_hidden_dim();
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
    if (f == "--no-interleave") {
      a.interleave = false;
      continue;
    }
    if (f == "--profile-ops") {
      a.profile_ops = true;
      continue;
    }
    if (f == "--dry-run") {
      a.dry_run = true;
      continue;
    }
    if (f == "--sweep-at-strategies") {
      a.planning.sweep_at_strategies = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value for " + f);
    std::string v = argv[++i];
    if (f == "--model") a.shape.model = v;
    else if (f == "--config") {
      apply_named_config(v, &a.shape);
      a.llama_config = v;
    }
    else if (f == "--beside") {
      if (v.find_first_not_of(" \t") == std::string::npos) usage("--beside needs a command, got '" + v + "'");
      a.beside = v;
    }
    else if (f == "--kv-heads") a.shape.kv_heads = parse_int(f, v, 1);
    else if (f == "--ffn") a.shape.ffn_hidden = parse_int(f, v, 1);
    else if (f == "--layers") a.shape.layers = parse_int(f, v, 1);
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
    else if (f == "--lr") a.lr = parse_lr(v);
    else if (f == "--meta-accounting") a.meta_accounting = v;
    else if (f == "--budget") a.planning.budget_bytes = planning_value(parse_budget, v);
    else if (f == "--sweep") a.planning.sweep = planning_value(parse_sweep, v);
    else if (f == "--offload") a.planning.offload_bytes = planning_value(parse_offload, v);
    else if (f == "--export-plan") a.planning.export_plan = v;
    else if (f == "--plan") a.planning.plan_file = v;
    else if (f == "--clock") a.clock = v;
    else if (f == "--estimate") {
      a.estimate = v;
      a.planning.estimate_mode = planning_value_mode(v);
    }
    else if (f == "--attention") a.attention = v;
    else if (f == "--optimizer") {
      if (v != "adamw" && v != "adamw-fused") usage("--optimizer must be adamw or adamw-fused, got '" + v + "'");
      a.fused_adamw = v == "adamw-fused";
    }
    else usage("unknown flag " + f);
  }
  if (a.device != "cpu" && a.device != "cuda") usage("--device must be cpu or cuda, got '" + a.device + "'");
  if (a.clock != "wall" && a.clock != "cpu") usage("--clock must be wall or cpu, got '" + a.clock + "'");
  if (a.dtype != "f32" && a.dtype != "bf16") usage("--dtype must be f32 or bf16, got '" + a.dtype + "'");
  if (a.attention != "math" && a.attention != "sdpa")
    usage("--attention must be math or sdpa, got '" + a.attention + "'");
  if (a.meta_accounting.empty()) a.meta_accounting = a.device;
  if (a.meta_accounting != "cpu" && a.meta_accounting != "cuda")
    usage("--meta-accounting must be cpu or cuda, got '" + a.meta_accounting + "'");
  if (a.shape.model != "gpt" && a.shape.model != "llama") usage("--model must be gpt or llama, got '" + a.shape.model + "'");
  if (a.shape.embd % a.shape.heads != 0) usage("--embd must be divisible by --heads");
  if (!a.shape.is_llama() && (a.shape.kv_heads > 0 || a.shape.ffn_hidden > 0))
    usage("--kv-heads and --ffn are the Llama's (--model llama)");
  if (a.shape.is_llama() && a.shape.heads % a.shape.kv_heads_or_heads() != 0)
    usage("--heads must be divisible by --kv-heads (grouped-query attention), got " + std::to_string(a.shape.heads) +
          " and " + std::to_string(a.shape.kv_heads));
  if (a.shape.is_llama() && (a.shape.embd / a.shape.heads) % 2 != 0)
    usage("the Llama's head size (--embd / --heads) must be even for its rotary embeddings, got " +
          std::to_string(a.shape.embd / a.shape.heads));
  try {
    if (!a.strategies.empty()) select_strategies(a.strategies, a.shape.model);  // an unknown name: bad usage, before the run
  } catch (const Error& e) {
    usage(e.what());
  }
  if (a.dry_run && !a.compare.empty()) usage("--compare needs measurements; it cannot go with --dry-run");
  if (a.dry_run && a.profile_ops) usage("--profile-ops times the ops run; it cannot go with --dry-run");
  if (!a.beside.empty() && a.dry_run)
    usage("--beside times PyTorch's steps beside remat's; it cannot go with --dry-run");
  if (!a.beside.empty() && !a.interleave)
    usage("--beside takes PyTorch's steps in the timing in turn; it cannot go with --no-interleave");
  try {
    check_planning_args(a.planning, a.dry_run);
    check_offload_args(a.planning, a.device, a.meta_accounting, a.dry_run);
    check_plan_file_args(a.planning);
    // Outputs and inputs before the run: a run of minutes that cannot save or compare is bad usage.
    if (!a.out.empty()) check_output_dir(a.out, "--out");
    std::stringstream files(a.compare);
    for (std::string file; std::getline(files, file, ',');) {
      if (file.empty()) continue;
      const std::string text = read_input_file(file, "--compare", kMaxCompareBytes);
      a.compared.emplace_back();
      try {  // a file it cannot read (not JSON, a null figure) is refused before the run, too
        from_json(text, &a.compared.back().first, &a.compared.back().second);
      } catch (const Error& e) {
        throw Error("--compare " + cli_detail::quoted_path(file) + ": " + e.what());
      }
    }
  } catch (const Error& e) {
    usage(e.what());
  }
  a.shape.bytes_per_element = a.dtype == "bf16" ? 2 : 4;
  if (a.shape.is_llama() && a.shape.ffn_hidden == 0)  // as the results and their readers name it
    a.shape.ffn_hidden = llama_config(a.shape, kFloat, Device{kMeta}).ffn_hidden_dim();
  try {
    check_model_size(a.shape);  // bench/activation_model.h: an impossible model, before anything runs
  } catch (const Error& e) {
    usage(e.what());
  }
  // A benchmark times calls on the CPU this run measures on; for CUDA (or a run that measures
  // nothing) the roofline.
  const bool benchmark_here = a.meta_accounting == "cpu" && a.device == "cpu" && !a.dry_run;
  if (a.estimate.empty()) a.planning.estimate_mode = benchmark_here ? EstimateMode::kBenchmark : EstimateMode::kCostModel;
  if (a.planning.estimate_mode == EstimateMode::kBenchmark && a.meta_accounting != "cpu")
    usage("--estimate benchmark times op calls on the CPU; planning for cuda (--meta-accounting cuda) needs cost-model");
  return a;
}

// A progress bar on a terminal (in a log it would be noise).
void progress(const std::string& strategy, const char* what, size_t index, size_t total, int64_t step, int64_t steps) {
  static const bool terminal = isatty(fileno(stderr)) != 0;
  if (!terminal) return;
  const int width = 30;
  double done = (static_cast<double>(index) + static_cast<double>(step) / static_cast<double>(steps)) / static_cast<double>(total);
  int filled = static_cast<int>(done * width);
  std::fprintf(stderr, "\r[%s%s] %3.0f%%  %-14s %-9s step %lld/%lld   ",
               std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), '.').c_str(), done * 100.0, strategy.c_str(), what,
               (long long)step + 1, (long long)steps);
  std::fflush(stderr);
}

// The training steps' options from the flags (the strategies', the plans' and the planner's).
TrainingOptions training_options(const Args& a) {
  TrainingOptions o;
  o.dtype = a.dtype == "bf16" ? kBFloat16 : kFloat;
  o.lr = a.lr;
  o.fused_adamw = a.fused_adamw;
  o.cpu_clock = a.clock == "cpu";
  o.attention = a.attention == "sdpa" ? SDPBackend::FLASH_ATTENTION : SDPBackend::MATH;
  return o;
}

// What the --beside peer is told to build: the same model, dtype, threads, clock and strategies.
StepPeerConfig step_peer_config(const Args& a, int threads, const std::vector<Strategy>& strategies) {
  StepPeerConfig peer;
  peer.shape = a.shape;
  peer.llama_config = a.llama_config;
  peer.device = a.device;
  peer.dtype = a.dtype;
  peer.clock = a.clock;
  peer.attention = a.attention;
  peer.threads = threads;
  peer.lr = a.lr;
  peer.fused_adamw = a.fused_adamw;
  for (const Strategy& s : strategies) peer.strategies.push_back(s.name);
  return peer;
}

// The device whose cost model and allocator the planner assumes: the one the dry runs count like.
Device planning_device(const Args& a) { return a.meta_accounting == "cuda" ? Device{kCUDA} : Device{kCPU}; }

// A diverged run stops: its figures would be NaN, and results.json could not be read back.
void check_losses(const std::string& strategy, const std::vector<StepRecord>& steps, int64_t warmup) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t step = static_cast<int64_t>(i) + 1;
    REMAT_CHECK(std::isfinite(steps[i].loss), strategy, ": the loss became ", steps[i].loss, " at step ", step,
                step <= warmup ? " (a warm-up step)" : "", " (the run diverged; try a smaller --lr)");
  }
}

// One strategy: the dry run on Meta, then (unless --dry-run) the same steps on the device, both
// through run_training_steps, so that the two build the same model the same way.
StrategyResult run(const Strategy& s, const Args& a, size_t index, size_t total, Device device, bool timeline = true) {
  StrategyResult r;
  r.name = s.name;
  r.description = s.description;
  r.reentrant = s.reentrant;
  TrainingOptions o = training_options(a);
  o.keep_timeline = timeline && a.timeline && !a.out.empty();
  const int64_t steps = a.warmup + a.steps;
  {
    std::optional<MetaAccountingGuard> accounting;
    if (a.meta_accounting == "cuda") accounting.emplace(kCUDA);
    o.on_step = [&](int64_t step) { progress(s.name, "dry run", index, total, step, a.dry_run ? steps : 2 * steps); };
    const double t0 = now_seconds();
    std::vector<StepRecord> predicted = run_training_steps(s, a.shape, Device{kMeta}, steps, o);
    const double seconds = now_seconds() - t0;
    record_predicted(predicted, a.warmup, seconds, &r);
  }
  if (!a.dry_run) {
    // --profile-ops: the mode pushed before the first timed step, popped after the last.
    struct ProfileScope {
      std::shared_ptr<OpProfile> profile;
      bool pushed = false;
      ~ProfileScope() { if (pushed) DispatchModeTLS::pop(); }
    } scope;
    if (a.profile_ops) scope.profile = std::make_shared<OpProfile>();
    o.on_step = [&](int64_t step) {
      progress(s.name, "measured", index, total, steps + step, 2 * steps);
      if (scope.profile && step == a.warmup) DispatchModeTLS::push(scope.profile), scope.pushed = true;
    };
    const std::vector<StepRecord> measured = run_training_steps(s, a.shape, device, steps, o);
    if (scope.profile) {
      DispatchModeTLS::pop();
      scope.pushed = false;
      if (isatty(fileno(stderr))) std::fprintf(stderr, "\n");  // past the progress bar
      std::printf("%s: its ops per timed step (%lld steps; the dispatch mode's boxing not counted)\n%s",
                  s.name.c_str(), static_cast<long long>(a.steps), scope.profile->table(a.steps).c_str());
      // Against the copy bandwidth measured now, on the step's thread count (CPU only: a device's
      // ops run asynchronously, so their host-side times say nothing of their bytes).
      if (device.is_cpu())
        std::printf("%s", scope.profile->roofline(a.steps, measure_copy_bandwidth(omp_get_max_threads())).c_str());
      std::printf("\n");
    }
    check_losses(s.name, measured, a.warmup);
    record_measured(measured, a.warmup, &r);
  }
  return r;
}

// To a temporary name, checked, then renamed (engine/core/file_io.h): /dev/full fails loudly.
void write_file(const std::string& path, const std::string& text) { write_file_atomically(path, text); }

// The files a run writes into --out, an earlier run's removed before this one starts: a failed
// run leaves none that looks complete.
void remove_earlier_outputs(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> owned;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    auto svg = [&](const std::string& prefix) {
      return name.rfind(prefix, 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".svg") == 0;
    };
    if (name == "results.json" || name == "report.html" || svg("memory_vs_") || svg("timeline_")) owned.push_back(name);
  }
  closedir(d);
  for (const std::string& name : owned) std::remove((dir + "/" + name).c_str());
}


// A plan for `budget`, run like the strategies (the same steps, a dry run first), its figures kept.
StrategyResult run_plan(const CheckpointPlan& plan, const std::string& name, const Args& a, size_t index, size_t total,
                        Device device, bool timeline) {
  StrategyResult r = run(planned_strategy(plan, name), a, index, total, device, timeline);
  record_plan(plan, &r);
  return r;
}

// --sweep N and --sweep-at-strategies: the budgets, each planned and run; with --offload, each
// planned again allowing offload and run likewise, into `offload`.
std::vector<StrategyResult> run_sweep(const Args& a, const std::vector<StrategyResult>& results, Device device,
                                      std::vector<StrategyResult>* offload) {
  const TrainingOptions o = training_options(a);
  const CheckpointPlan bounds = plan_bounds(a.shape, o, planning_device(a), a.planning);
  const int64_t lo = bounds.recompute_all_peak_bytes, hi = bounds.keep_all_peak_bytes;
  std::vector<int64_t> budgets;
  if (a.planning.sweep > 0) budgets = sweep_budgets(lo, hi, a.planning.sweep);
  std::map<int64_t, std::string> at;  // budget -> the strategies whose measured peak it is
  if (a.planning.sweep_at_strategies) {
    for (const StrategyResult& r : results) {
      if (r.planned() || !r.measured.known) continue;
      if (r.measured.peak_bytes < lo) {
        std::printf("%s: its peak %s is below the lowest any plan reaches (%s): not planned\n", r.name.c_str(),
                    byte_size_text(r.measured.peak_bytes).c_str(), byte_size_text(lo).c_str());
        continue;
      }
      std::string& names = at[r.measured.peak_bytes];
      names += (names.empty() ? "" : ",") + r.name;
      budgets.push_back(r.measured.peak_bytes);
    }
  }
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  std::printf("\nsweep: %zu budgets between %s (everything recomputed) and %s (everything kept); bounds in %.2f s\n",
              budgets.size(), byte_size_text(lo).c_str(), byte_size_text(hi).c_str(), bounds.planning_seconds);
  std::fflush(stdout);
  check_sweep_plan_files(a.planning, budgets);  // --plan DIR: a file for every budget, before any runs
  std::vector<StrategyResult> sweep;
  double planning = 0;
  for (size_t i = 0; i < budgets.size(); ++i) {
    const CheckpointPlan plan = sweep_plan(a.shape, o, budgets[i], planning_device(a), a.planning, a.meta_accounting);
    planning += plan.planning_seconds;
    sweep.push_back(run_plan(plan, planned_name(budgets[i]), a, i, budgets.size(), device, /*timeline=*/false));
    if (a.planning.sweep > 0 && !a.planning.export_plan.empty())  // --export-plan DIR: one file per budget
      export_plan(plan, sweep.back(), sweep_plan_path(a.planning.export_plan, budgets[i]));
    if (a.planning.offload_bytes > 0) {
      const CheckpointPlan with_offload =
          plan_budget(a.shape, o, budgets[i], planning_device(a),
                      "--offload " + byte_size_text(a.planning.offload_bytes) + ", --sweep", a.planning,
                      a.planning.offload_bytes);
      planning += with_offload.planning_seconds;
      offload->push_back(run_plan(with_offload, planned_name(budgets[i], /*offload=*/true), a, i, budgets.size(), device,
                                  /*timeline=*/false));
    }
    auto it = at.find(budgets[i]);
    if (it == at.end()) continue;
    sweep.back().at_strategy = it->second;
    // The plan and each strategy at this peak, step by step in turn: the fairer comparison.
    std::stringstream names(it->second);
    std::string name;
    while (std::getline(names, name, ',')) {
      if (isatty(fileno(stderr)) != 0) std::fprintf(stderr, "\r%-60s", ("paired: " + name + " and its plan").c_str());
      const std::vector<Strategy> pair = {select_strategies(name, a.shape.model).at(0), planned_strategy(plan, "planned")};
      const auto seconds = interleaved_step_seconds(pair, a.shape, device, a.steps, a.warmup, o);
      sweep.back().paired.push_back({name, median_of(seconds[0]) * 1e3, median_of(seconds[1]) * 1e3, a.steps});
    }
  }
  if (isatty(fileno(stderr)) != 0) std::fprintf(stderr, "\r%90s\r", "");
  const size_t plans = budgets.size() * (a.planning.offload_bytes > 0 ? 2 : 1);
  std::printf("planning took %.2f s for the %zu plans (%.2f s each on average)\n", planning, plans,
              plans == 0 ? 0.0 : planning / static_cast<double>(plans));
  return sweep;
}

// The run the flags ask for; main() below reports what it throws.
int run(Args& a) {
  {
    Device device = a.device == "cuda" ? Device{kCUDA} : Device{kCPU};
    if (!a.dry_run && device.is_cuda() && !cuda_is_available())  // engine/core/cuda_hooks.h
      throw UsageError("--device cuda, but no CUDA device is available (or remat was built without CUDA); "
                       "--dry-run predicts without one");
    std::vector<Strategy> strategies =
        a.strategies.empty() ? all_strategies(a.shape.model) : select_strategies(a.strategies, a.shape.model);

    RunConfig cfg;
    cfg.shape = a.shape;
    // Under --config=cuda_emu kCUDA is the emulated device: say so wherever the device is named.
    cfg.device = a.device == "cuda" && remat::cuda::is_emulated() ? "cuda (emulated)" : a.device;
    cfg.dtype = a.dtype;
    cfg.attention = a.attention;
    cfg.steps = a.steps;
    cfg.warmup = a.warmup;
    cfg.forward_flops = forward_matmul_flops(a.shape, true);
    cfg.model_flops_per_step = 3 * forward_matmul_flops(a.shape, false);
    cfg.dry_run = a.dry_run;
    cfg.meta_accounting = a.meta_accounting;
    cfg.offload_bytes = a.planning.offload_bytes;
    if (cfg.offload_bytes > 0) {
      cfg.host_link_datasheet = kH200HostLinkBandwidth;  // checkpoint/cost_model_defaults.h
      if (cuda_is_available()) {
        cfg.host_link_source = host_link_bandwidth_source(planning_device(a));
      } else {  // a dry run in a build without CUDA: no link to measure
        a.planning.host_link_bandwidth = kH200HostLinkBandwidth;
        cfg.host_link_source = "PCIe 5.0 x16 datasheet (no CUDA device here to measure)";
      }
    }
    cfg.threads = omp_get_max_threads();
    // Before the steps, in the same run: the peak the step's matmul throughput is compared with.
    if (!a.dry_run && device.is_cpu()) cfg.fma_peak_gflops = measure_fma_peak_gflops(cfg.threads);
    // The planner's cost model on this machine, as it is now: its FMA peak and copy bandwidth.
    if (a.planning.budget_bytes > 0 || a.planning.sweeps()) {
      if (planning_device(a).is_cpu()) {
        a.planning.peak_flops = (cfg.fma_peak_gflops > 0 ? cfg.fma_peak_gflops : measure_fma_peak_gflops(cfg.threads)) * 1e9;
        a.planning.bandwidth = measure_copy_bandwidth(cfg.threads);
        std::printf("planner's cost model, measured in this run: %.0f GFLOP/s, %.1f GB/s (%lld threads)\n",
                    a.planning.peak_flops / 1e9, a.planning.bandwidth / 1e9, static_cast<long long>(cfg.threads));
      }
      a.planning.estimator = std::make_shared<RuntimeEstimator>(a.planning.estimate_mode, planning_device(a),
                                                                a.planning.peak_flops, a.planning.bandwidth);
      std::printf("planner's estimate: %s%s\n", toString(a.planning.estimate_mode),
                  a.planning.estimate_mode == EstimateMode::kBenchmark
                      ? " (each distinct op call of the checkpointed regions timed once on this machine)"
                      : " (max of FLOPs / peak and bytes / bandwidth)");
    }
    cfg.clock = a.clock;

    std::vector<StrategyResult> results;
    // --budget is planned first: a budget below the minimum fails before anything runs.
    std::optional<CheckpointPlan> plan;
    if (a.planning.budget_bytes > 0)
      plan = plan_budget(a.shape, training_options(a), a.planning.budget_bytes, planning_device(a), "--budget",
                         a.planning);
    // --beside: the peer started and its models built before the run, so that a command that cannot
    // run, or a PyTorch without one of the strategies, stops it at once. It runs the fixed strategies
    // and one plan: --budget's (saved to a temporary file for it), else --plan FILE's.
    std::unique_ptr<PeerProcess> beside;
    std::string beside_framework;
    std::unique_ptr<PlanForPeer> beside_plan;
    if (!a.beside.empty()) {
      StepPeerConfig peer = step_peer_config(a, static_cast<int>(cfg.threads), strategies);
      if (plan) {
        beside_plan = std::make_unique<PlanForPeer>(*plan);
        peer.plan_file = beside_plan->path();
      } else if (!a.planning.plan_file.empty() && a.planning.sweep == 0) {
        peer.plan_file = a.planning.plan_file;
      }
      beside = std::make_unique<PeerProcess>("memory_vs_recompute --beside", a.beside);
      beside_framework = parse_step_session(a.beside, beside->ask(step_session_request(peer)), peer);
    }
    for (size_t i = 0; i < strategies.size(); ++i) results.push_back(run(strategies[i], a, i, strategies.size(), device));
    if (plan) results.push_back(run_plan(*plan, "planned", a, 0, 1, device, /*timeline=*/true));
    if (plan && !a.planning.export_plan.empty()) export_plan(*plan, results.back(), a.planning.export_plan);
    std::optional<PlanFile> plan_file;  // --plan FILE: a saved plan, applied to this step and run
    if (!a.planning.plan_file.empty() && a.planning.sweep == 0) {  // with --sweep: a folder (run_sweep)
      plan_file = load_plan_file(a.planning.plan_file, a.shape, training_options(a), a.meta_accounting);
      results.push_back(run_plan(plan_file->applied, "plan-file", a, 0, 1, device, /*timeline=*/true));
    }
    if (!a.dry_run && a.interleave && (results.size() >= 2 || beside)) {
      std::vector<Strategy> in_turn = strategies;
      if (plan) in_turn.push_back(planned_strategy(*plan, "planned"));
      if (plan_file) in_turn.push_back(planned_strategy(plan_file->applied, "plan-file"));
      if (isatty(fileno(stderr)) != 0)
        std::fprintf(stderr, "\r%-60s", beside ? "every strategy in turn, PyTorch's beside" : "every strategy in turn");
      // --beside: PyTorch's step of each fixed strategy right after remat's, and of the plan it was given
      // (kStepPeerPlan) after the row of that plan
      std::vector<std::string> peer_names;
      for (const Strategy& s : strategies) peer_names.push_back(s.name);
      if (plan) peer_names.push_back(kStepPeerPlan);
      if (plan_file) peer_names.push_back(plan ? "" : kStepPeerPlan);  // with --budget, its plan ran beside
      std::vector<std::vector<double>> torch_ms(in_turn.size());
      auto torch_step = [&](size_t i, bool timed) {
        if (i >= peer_names.size() || peer_names[i].empty()) return;
        const double ms = parse_step_answer(a.beside, peer_names[i], beside->ask(step_request(peer_names[i])));
        if (timed) torch_ms[i].push_back(ms);
      };
      const auto seconds = interleaved_step_seconds(in_turn, a.shape, device, a.steps, a.warmup, training_options(a),
                                                    beside ? std::function<void(size_t, bool)>(torch_step) : nullptr);
      for (size_t i = 0; i < results.size(); ++i) results[i].interleaved_ms = median_of(seconds[i]) * 1e3;
      for (size_t i = 0; i < torch_ms.size() && beside; ++i)
        if (!torch_ms[i].empty()) results[i].beside_ms = median_of(torch_ms[i]);
    }
    if (isatty(fileno(stderr)) != 0) std::fprintf(stderr, "\r%90s\r", "");
    print_table(cfg, results);
    if (beside) std::printf("PyTorch beside: %s (--beside %s)\n", beside_framework.c_str(), a.beside.c_str());
    if (a.planning.budget_bytes > 0) std::printf("\n%s\n", planning_line(results[strategies.size()]).c_str());
    if (plan_file) std::printf("\n%s\n", plan_file_line(a.planning.plan_file, *plan_file, results.back()).c_str());
    auto print_estimator = [&] {
      const RuntimeEstimator& e = *a.planning.estimator;
      if (e.mode() == EstimateMode::kBenchmark)
        std::printf("the planner's benchmark: %lld distinct op calls timed in %.2f s (in the planning times)\n",
                    static_cast<long long>(e.benchmarked_calls()), e.benchmark_seconds());
    };
    if (a.planning.budget_bytes > 0 && !a.planning.sweeps()) print_estimator();
    std::vector<StrategyResult> sweep, offload;
    if (a.planning.sweeps()) {
      sweep = run_sweep(a, results, device, &offload);
      print_sweep(results, sweep);
      print_offload(cfg, sweep, offload);
      print_estimator();
    }

    if (!a.out.empty()) {
      write_file(a.out + "/results.json", to_json(cfg, results, sweep, offload));
      if (!a.dry_run) {
        write_file(a.out + "/memory_vs_time.svg", pareto_svg(cfg, results, sweep, ParetoX::kStepTime, offload));
        write_file(a.out + "/memory_vs_flops.svg",
                   pareto_svg(cfg, results, sweep, ParetoX::kRecomputedFlops, offload));
      }
      if (!offload.empty()) write_file(a.out + "/memory_vs_modeled_cost.svg", modeled_cost_svg(cfg, sweep, offload));
      for (const StrategyResult& r : results)
        if (!r.measured.timeline.empty() || !r.predicted.timeline.empty())
          write_file(a.out + "/timeline_" + r.name + ".svg", timeline_svg(cfg, r));
      write_file(a.out + "/report.html", report_html(cfg, results, sweep, offload));
      std::printf("\nwrote %s/report.html (open it in a browser), results.json, %s%stimeline_<strategy>.svg\n",
                  a.out.c_str(), a.dry_run ? "" : "memory_vs_time.svg, memory_vs_flops.svg, ",
                  offload.empty() ? "" : "memory_vs_modeled_cost.svg, ");
    }
    // One comparison per file (e.g. PyTorch 2.x and 1.13 runs of bench/torch_reference.py).
    for (const auto& [other_cfg, other] : a.compared) {
      print_comparison(cfg, results, other_cfg, other);
      print_plan_comparison(cfg, sweep, other_cfg, other);
    }
  }
  return 0;
}

}  // namespace

// Anything thrown: one "error: ..." line; exit 2 for bad usage (parse() exits 2 itself), 1 for a
// failed run, and 1 when stdout could not be written, e.g. a full disk (engine/core/cli.h).
int main(int argc, char** argv) {
  return run_main([&] {
    Args a = parse(argc, argv);
    if (!a.out.empty()) remove_earlier_outputs(a.out);
    try {
      return run(a);
    } catch (...) {
      if (isatty(fileno(stderr)) != 0) std::fprintf(stderr, "\r%90s\r", "");  // the progress bar's line
      throw;
    }
  });
}
