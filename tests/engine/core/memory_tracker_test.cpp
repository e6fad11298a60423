// Tests engine/core/memory_tracker.{h,cpp} (torch.distributed._tools.mem_tracker.MemTracker's
// role): every allocation and free with its op, scope, phase and category; the peak and what
// it is made of, with exact figures, the same on the CPU and on Meta.
#include <catch2/catch.hpp>

#include <numeric>
#include <thread>

#include "remat.h"

using namespace remat;

namespace {

int64_t sum_of(const std::map<MemoryCategory, int64_t>& m) {
  int64_t s = 0;
  for (const auto& [c, b] : m) s += b;
  return s;
}

int64_t bytes_of(const std::vector<Tensor>& ts) {
  int64_t s = 0;
  for (const Tensor& t : ts) s += t.nbytes();
  return s;
}

// A two-layer MLP trained with AdamW on `device`; returns the tracker of the second step.
struct MlpRun {
  int64_t param_bytes = 0, grad_bytes = 0;
  int64_t peak = 0;
  std::map<MemoryCategory, int64_t> at_peak;
  std::map<MemoryCategory, int64_t> current;
  std::vector<MemoryEvent> timeline;
  std::vector<int64_t> allocation_sizes;
};

MlpRun train_mlp_two_steps(Device device, MemoryTracker::Keep keep = MemoryTracker::Keep::kTimeline) {
  TensorOptions o = TensorOptions().device(device);
  Generator gen(7);
  nn::Linear fc1(32, 64, true, &gen, o), fc2(64, 8, true, &gen, o);
  std::vector<Tensor> params = {fc1.weight, fc1.bias, fc2.weight, fc2.bias};
  optim::AdamW opt(params, optim::AdamWOptions(1e-3));
  Tensor x = device.is_meta() ? empty({16, 32}, o) : randn({16, 32}, o, &gen);
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = sum(gelu(fc2.forward(gelu(fc1.forward(x)))));
    loss.backward();
    opt.step();
  };
  step();  // the first step creates the optimizer state
  MlpRun r;
  MemoryTracker tracker(device, keep);
  step();
  r.param_bytes = bytes_of(params);
  for (const Tensor& p : params) r.grad_bytes += p.grad().nbytes();
  r.peak = tracker.peak();
  r.at_peak = tracker.at_peak();
  r.current = tracker.current();
  r.timeline = tracker.timeline();
  r.allocation_sizes = tracker.allocation_sizes();
  return r;
}

}  // namespace

TEST_CASE("MemoryTracker: the peak of an AdamW step holds the parameters, twice them as state, the gradients",
          "[memory_tracker]") {
  for (Device device : {Device{kCPU}, Device{kMeta}}) {
    INFO("device " << device);
    MlpRun r = train_mlp_two_steps(device);
    const int64_t params = (32 * 64 + 64 + 64 * 8 + 8) * 4;
    REQUIRE(r.param_bytes == params);
    CHECK(r.at_peak[MemoryCategory::Parameter] == params);
    CHECK(r.at_peak[MemoryCategory::OptimizerState] == 2 * params);  // exp_avg and exp_avg_sq
    CHECK(r.at_peak[MemoryCategory::Gradient] == r.grad_bytes);
    CHECK(r.grad_bytes == params);
    CHECK(sum_of(r.at_peak) == r.peak);
    bool backward = false, forward = false, optimizer = false;
    for (const MemoryEvent& e : r.timeline) {
      backward |= e.phase == "backward";
      forward |= e.phase == "forward";
      optimizer |= e.phase == "optimizer";
    }
    CHECK(backward);
    CHECK(forward);
    CHECK(optimizer);
  }
}

TEST_CASE("MemoryTracker: Keep::kCounts gives the same peak, categories and allocation sizes, and no timeline",
          "[memory_tracker]") {
  for (Device device : {Device{kCPU}, Device{kMeta}}) {
    INFO("device " << device);
    MlpRun whole = train_mlp_two_steps(device), counts = train_mlp_two_steps(device, MemoryTracker::Keep::kCounts);
    REQUIRE_FALSE(whole.timeline.empty());
    CHECK(counts.timeline.empty());
    CHECK(counts.peak == whole.peak);
    CHECK(counts.at_peak == whole.at_peak);
    CHECK(counts.current == whole.current);
    REQUIRE_FALSE(whole.allocation_sizes.empty());
    CHECK(counts.allocation_sizes == whole.allocation_sizes);
    std::vector<int64_t> from_timeline;  // what allocation_sizes() says: the timeline's allocations
    for (const MemoryEvent& e : whole.timeline)
      if (!e.relabel && e.delta > 0) from_timeline.push_back(e.delta);
    CHECK(whole.allocation_sizes == from_timeline);
  }
}

TEST_CASE("MemoryTracker: the CPU and Meta runs record the same events", "[memory_tracker]") {
  MlpRun cpu = train_mlp_two_steps(Device{kCPU});
  MlpRun meta = train_mlp_two_steps(Device{kMeta});
  CHECK(cpu.peak == meta.peak);
  CHECK(cpu.at_peak == meta.at_peak);
  REQUIRE(cpu.timeline.size() == meta.timeline.size());
  for (size_t i = 0; i < cpu.timeline.size(); ++i) {
    INFO("event " << i);
    CHECK(cpu.timeline[i].delta == meta.timeline[i].delta);
    CHECK(cpu.timeline[i].op == meta.timeline[i].op);
    CHECK(cpu.timeline[i].scope == meta.timeline[i].scope);
    CHECK(cpu.timeline[i].category == meta.timeline[i].category);
    CHECK(cpu.timeline[i].phase == meta.timeline[i].phase);
  }
}

TEST_CASE("MemoryTracker: each event carries memory_reserved after it (a dry run counting like CUDA)",
          "[memory_tracker]") {
  DryRun dry(kCUDA);
  const Device meta{kMeta};
  std::vector<MemoryEvent> events;
  {
    MemoryTracker tracker(meta);
    Tensor small = empty({1000}, TensorOptions().device(meta));       // 4000 B: a new 2 MiB small segment
    Tensor large = empty({393216}, TensorOptions().device(meta));     // 1.5 MiB: a new 20 MiB large segment
    Tensor again = empty({1000}, TensorOptions().device(meta));       // fits in the small segment
    small = Tensor();                                                 // back to the cache: still reserved
    events = tracker.timeline();
  }
  const int64_t MiB = 1 << 20;
  REQUIRE(events.size() == 4);
  CHECK(events[0].reserved == 2 * MiB);
  CHECK(events[1].reserved == 22 * MiB);
  CHECK(events[2].reserved == 22 * MiB);
  CHECK(events[3].delta == -4096);  // allocated counts the block, 512-byte rounded, as CUDA does
  CHECK(events[3].reserved == 22 * MiB);
  CHECK(memory_reserved(meta) == 22 * MiB);
}

TEST_CASE("MemoryTracker: events name the op, the scope, the phase and the category", "[memory_tracker]") {
  Tensor w = randn({8, 8}).requires_grad_();
  claim_memory(w, MemoryCategory::Parameter);  // as nn::Module does: saving it leaves it a parameter
  Tensor x = randn({4, 8});
  reset_peak_memory_stats();
  MemoryTracker tracker;
  const int64_t start = memory_allocated();
  Tensor y;
  {
    scope s("block");
    MemoryPhaseGuard phase(MemoryPhase::Forward);
    y = relu(mm(x, w));  // mm's output (temporary, freed later), relu's output (saved: activation)
  }
  sum(y).backward();
  const std::vector<MemoryEvent>& t = tracker.timeline();
  // mm saves x for w's gradient first: x (made outside any phase, Other) becomes an activation.
  REQUIRE(t.size() >= 4);
  CHECK(t[0].relabel);
  CHECK(t[0].category == MemoryCategory::Other);
  CHECK(t[0].delta == -4 * 8 * 4);
  CHECK(t[1].relabel);
  CHECK(t[1].category == MemoryCategory::Activation);
  CHECK(t[1].op == "aten::mm");
  CHECK(t[2].op == "aten::mm");  // then mm's output
  CHECK(!t[2].relabel);
  CHECK(t[2].scope == "block");
  CHECK(t[2].phase == "forward");
  CHECK(t[2].category == MemoryCategory::Temporary);
  CHECK(t[2].delta == 4 * 8 * 4);
  CHECK(t[2].allocated == start + 4 * 8 * 4);
  CHECK(t[3].op == "aten::relu");
  // relu saves its result: the bytes become an activation (a pair of relabel events).
  bool relabelled = false;
  for (size_t i = 0; i + 1 < t.size(); ++i)
    if (t[i].relabel && t[i + 1].relabel && t[i + 1].category == MemoryCategory::Activation) relabelled = true;
  CHECK(relabelled);
  bool grad = false;
  for (const MemoryEvent& e : t)
    if (e.phase == "backward" && e.category == MemoryCategory::Gradient) grad = true;
  CHECK(grad);  // w.grad, kept by AccumulateGrad
  CHECK(tracker.peak() == max_memory_allocated());  // both count from the same moment
  int64_t net = 0;
  for (const MemoryEvent& e : t) net += e.delta;
  CHECK(net == memory_allocated() - start);  // the deltas add up to what is live now
}

TEST_CASE("MemoryTracker: bytes alive before it starts are known by category; only its device counts",
          "[memory_tracker]") {
  Tensor p = empty({10}, Device{kMeta});
  claim_memory(p, MemoryCategory::Parameter);
  MemoryTracker tracker(Device{kMeta});
  Tensor cpu = empty({100});  // another device: not recorded
  CHECK(tracker.timeline().empty());
  CHECK(tracker.at_peak()[MemoryCategory::Parameter] >= 40);
  CHECK(sum_of(tracker.at_peak()) == memory_allocated(Device{kMeta}));
  CHECK(tracker.peak() == memory_allocated(Device{kMeta}));
}

TEST_CASE("MemoryTracker: on Meta it sees only its own dry run, whatever other threads run at once",
          "[memory_tracker][dry_run][threads]") {
  auto summary = [](const MlpRun& r) {
    std::vector<std::string> events;
    for (const MemoryEvent& e : r.timeline)
      events.push_back(std::to_string(e.allocated) + " " + std::to_string(e.delta) + " " + e.op + " " + e.scope + " " +
                       toString(e.category) + " " + e.phase + (e.relabel ? " relabel" : ""));
    return events;
  };
  MlpRun alone;
  {
    DryRun dry;
    alone = train_mlp_two_steps(Device{kMeta});
  }
  REQUIRE(!alone.timeline.empty());
  MemoryTracker outside(Device{kMeta});  // the process-wide state's: none of the dry runs below
  constexpr int kThreads = 4;
  std::vector<MlpRun> runs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&runs, t] {
      DryRun dry;
      runs[t] = train_mlp_two_steps(Device{kMeta});
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(runs[t].peak == alone.peak);
    CHECK(runs[t].at_peak == alone.at_peak);
    CHECK(summary(runs[t]) == summary(alone));
  }
  CHECK(outside.timeline().empty());
}

namespace {

// Runs fn(device) under a tracker on the CPU and on Meta: the same allocations in the same order,
// the same peak (a dry run is exact for whatever the step uses).
void check_same_on_meta(const std::function<void(Device)>& fn) {
  std::vector<std::string> sizes[2];  // "op bytes" of every allocation
  int64_t peaks[2] = {0, 0};
  const Device devices[2] = {Device{kCPU}, Device{kMeta}};
  for (int i = 0; i < 2; ++i) {
    const int64_t start = memory_allocated(devices[i]);
    reset_peak_memory_stats(devices[i]);
    MemoryTracker tracker(devices[i]);
    fn(devices[i]);
    for (const MemoryEvent& e : tracker.timeline())
      if (!e.relabel && e.delta > 0) sizes[i].push_back(e.op + " " + std::to_string(e.delta));
    peaks[i] = max_memory_allocated(devices[i]) - start;
  }
  CHECK(!sizes[0].empty());
  CHECK(sizes[0] == sizes[1]);
  CHECK(peaks[0] == peaks[1]);
}

// A small MLP block on `device`, its parameters made there.
struct Mlp {
  explicit Mlp(Device d) : gen(3), fc1(16, 32, true, &gen, TensorOptions().device(d)), fc2(32, 16, true, &gen, TensorOptions().device(d)) {}
  Tensor operator()(const Tensor& x) const { return fc2.forward(gelu(fc1.forward(x))); }
  std::vector<Tensor> params() const { return {fc1.weight, fc1.bias, fc2.weight, fc2.bias}; }
  Generator gen;
  nn::Linear fc1, fc2;
};

Tensor input_on(Device d, Shape s) {
  return d.is_meta() ? empty(s, TensorOptions().device(d).requires_grad(true)) : randn(s).requires_grad_();
}

}  // namespace

TEST_CASE("dry run: checkpoint_sequential, nesting and early_stop=false allocate on Meta what they do on the CPU",
          "[memory_tracker][dry_run]") {
  check_same_on_meta([](Device d) {
    Mlp a(d), b(d), c(d);
    Tensor x = input_on(d, {8, 16});
    Tensor y = checkpoint_sequential({[&](const Tensor& h) { return a(h); }, [&](const Tensor& h) { return b(h); },
                                      [&](const Tensor& h) { return c(h); }},
                                     2, x);
    CheckpointOptions no_early;
    no_early.early_stop = false;
    Tensor z = checkpoint([&](const Tensor& h) { return checkpoint([&](const Tensor& g) { return a(g).sin(); }, b(h)); },
                          y, no_early);
    sum(z).backward();
  });
}

TEST_CASE("dry run: save_on_cpu, SGD with momentum and clip_grad_norm_ allocate on Meta what they do on the CPU",
          "[memory_tracker][dry_run]") {
  check_same_on_meta([](Device d) {
    Mlp m(d);
    optim::SGD opt(m.params(), optim::SGDOptions(0.1).momentum(0.9));
    Tensor x = input_on(d, {8, 16});
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      Tensor loss;
      {
        save_on_cpu offload;
        loss = sum(m(x));
      }
      loss.backward();
      nn::utils::clip_grad_norm_(m.params(), 1.0);
      opt.step();
    }
  });
}

TEST_CASE("dry run: a bf16 autocast step allocates on Meta what it does on the CPU", "[memory_tracker][dry_run]") {
  check_same_on_meta([](Device d) {
    Mlp m(d);
    Tensor x = input_on(d, {8, 16});
    Tensor loss;
    {
      autocast ac(d.type, kBFloat16);
      loss = sum(m(x).to(kFloat));
    }
    loss.backward();
  });
}

TEST_CASE("dry run: SAC with checkpoint allocates on Meta what it does on the CPU", "[memory_tracker][dry_run]") {
  check_same_on_meta([](Device d) {
    Mlp m(d);
    Tensor x = input_on(d, {8, 16});
    CheckpointOptions o;
    o.context_fn = [] { return create_selective_checkpoint_contexts(policies::save_matmuls()); };
    sum(checkpoint([&](const Tensor& h) { return m(h).exp(); }, x, o)).backward();
  });
}
