// A property suite for checkpoint/planner.cpp: random small models (GPTs of random depth, width,
// heads and sequence length; MLPs whose blocks are SAC regions with nested scopes, some with a
// region nested in another; MLPs built on a custom op), each planned at random budgets inside its
// feasible range and run for real on the CPU. For every model:
//   - the real step's peak is the predicted peak, to the byte, and within the budget;
//   - the FLOPs recomputed are the plan's, and the loss and every gradient (and the parameters
//     after the optimizer's step) are bitwise those of the step without checkpointing;
//   - a larger budget never costs more (the modelled recompute cost is monotone in the budget);
//   - the plan is the same when made twice, in this process and in another one (the test runs
//     its own binary again, which plans every model afresh and prints the plans' digests).
// REMAT_PLANNER_PROPERTY_SEED sets the base seed, REMAT_PLANNER_PROPERTY_CASES the number of
// models (default 100; under AddressSanitizer the models are smaller). A failure names the model's
// seed and how to run that model alone.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <unistd.h>

#include "remat.h"
#include "tests/testing/planned_steps.h"

using namespace remat;
using remat::testing::bitwise_equal;
using remat::testing::plan_fingerprint;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoll(v, nullptr, 10) : fallback;
}

// The same numbers from the same seed on every platform (std::mt19937_64 is specified; the
// standard's distributions are not).
struct Rng {
  explicit Rng(uint64_t seed) : gen(seed) {}
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(gen() % static_cast<uint64_t>(hi - lo + 1)); }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(range(0, static_cast<int64_t>(v.size()) - 1))]; }
  std::mt19937_64 gen;
};

// x * sigmoid(x) as one opaque op: SAC keeps or recomputes it as a unit.
CustomOp& swish_op() {
  static CustomOp& op = [] () -> CustomOp& {
    CustomOp& o = custom_op("remat_planner_property::swish", [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{in[0] * sigmoid(in[0])};
    });
    o.register_fake([](const std::vector<Tensor>& in) { return std::vector<Tensor>{empty_like(in[0])}; });
    o.register_autograd(
        [](autograd::AutogradContext* ctx, const std::vector<Tensor>& grads) {
          const Tensor x = ctx->get_saved_variables()[0];
          const Tensor s = sigmoid(x);
          return std::vector<Tensor>{grads[0] * (s + x * s * (1.0 - s))};
        },
        [](autograd::AutogradContext* ctx, const std::vector<Tensor>& in, const std::vector<Tensor>&) {
          ctx->save_for_backward({in[0]});
        });
    return o;
  }();
  return op;
}

enum class Family { Gpt, Mlp, MlpCustomOp };
const char* toString(Family f) { return f == Family::Gpt ? "gpt" : f == Family::Mlp ? "mlp" : "mlp+custom-op"; }

struct Model {
  uint64_t seed = 0;
  Family family = Family::Gpt;
  remat::testing::GptShape gpt{};
  // MLP: `blocks` SAC regions of width -> hidden -> width, on a batch of `batch` rows.
  int64_t blocks = 0, width = 0, hidden = 0, batch = 0;
  bool nested_region = false;  // an inner SAC region inside every other block
  bool adamw = false;
  int64_t max_dry_runs = 0;

  std::string describe() const {
    std::ostringstream os;
    os << toString(family) << " (seed " << seed << "): ";
    if (family == Family::Gpt) {
      os << "layers " << gpt.layers << ", embd " << gpt.embd << ", heads " << gpt.heads << ", seq " << gpt.seq
         << ", batch " << gpt.batch << ", vocab " << gpt.vocab;
    } else {
      os << "blocks " << blocks << ", width " << width << ", hidden " << hidden << ", batch " << batch
         << (nested_region ? ", nested regions" : "") << (adamw ? ", AdamW" : ", SGD");
    }
    os << ", max_dry_runs " << max_dry_runs;
    return os.str();
  }
};

Model random_model(uint64_t seed) {
  Rng rng(seed);
  Model m;
  m.seed = seed;
  m.family = static_cast<Family>(rng.range(0, 2));
  // Under ASan (where every op costs several times more) smaller models and shorter searches.
  m.max_dry_runs = kSanitized ? rng.pick<int64_t>({8, 12, 16, 24}) : rng.pick<int64_t>({10, 20, 30, 40});
  const int64_t small = kSanitized ? 2 : 1;
  if (m.family == Family::Gpt) {
    m.gpt.layers = kSanitized ? 2 : rng.range(2, 3);
    m.gpt.heads = rng.pick<int64_t>({1, 2, 4});
    m.gpt.embd = m.gpt.heads * rng.pick<int64_t>({4, 8});
    m.gpt.seq = rng.range(12, 40) / small;
    m.gpt.batch = rng.range(2, 4);
    m.gpt.vocab = rng.range(7, 19);
  } else {
    m.blocks = kSanitized ? rng.range(2, 3) : rng.range(2, 4);
    m.width = rng.pick<int64_t>({8, 12, 16});
    m.hidden = m.width * rng.range(2, 4);
    m.batch = rng.range(16, 64) / small;
    m.nested_region = rng.range(0, 2) == 0;
    m.adamw = rng.range(0, 1) == 1;
  }
  return m;
}

// The MLP step: parameters and a batch made on `device` from the model's seed, every block a SAC
// region under `policy` (named blocks.<i>, with scopes mlp.fc1 / mlp.act / mlp.inner / mlp.fc2 inside),
// the loss, backward and the optimizer's step. Measures the peak from its start, then reads the
// loss, the gradients and the updated parameters (on the CPU).
remat::testing::StepResult mlp_step(const Model& m, const PolicyFn* policy, Device device) {
  reset_checkpoint_stats();
  const int64_t start = memory_allocated(device);
  reset_peak_memory_stats(device);
  remat::testing::StepResult r;
  Generator gen(m.seed);
  const TensorOptions o = TensorOptions().device(device).dtype(kDouble);
  auto param = [&](Shape shape, double bound) {
    Tensor p = empty(shape, o);
    nn::init::uniform_(p, -bound, bound, &gen);
    return p.requires_grad_();
  };
  std::vector<Tensor> params;
  for (int64_t i = 0; i < m.blocks; ++i) {
    params.push_back(param({m.hidden, m.width}, 1.0 / std::sqrt(static_cast<double>(m.width))));
    params.push_back(param({m.hidden}, 0.1));
    params.push_back(param({m.width, m.hidden}, 1.0 / std::sqrt(static_cast<double>(m.hidden))));
    params.push_back(param({m.width}, 0.1));
  }
  Tensor x = empty({m.batch, m.width}, o);
  nn::init::normal_(x, 0.0, 1.0, &gen);
  auto sac = [&] {
    CheckpointOptions c;
    if (policy != nullptr) {
      PolicyFn p = *policy;
      c.context_fn = [p] { return create_selective_checkpoint_contexts(p); };
    }
    return c;
  };
  auto activation = [&](const Tensor& t) { return m.family == Family::MlpCustomOp ? swish_op()({t})[0] : gelu(t); };
  Tensor h = x;
  {
    scope blocks("blocks");
    for (int64_t i = 0; i < m.blocks; ++i) {
      scope block(std::to_string(i));
      const Tensor *w1 = &params[4 * i], *b1 = &params[4 * i + 1], *w2 = &params[4 * i + 2], *b2 = &params[4 * i + 3];
      const bool nested = m.nested_region && i % 2 == 1;
      auto body = [&, w1, b1, w2, b2, nested](const Tensor& in) {  // rerun in backward: nothing of the loop by reference
        scope mlp("mlp");
        Tensor a;
        {
          scope fc1("fc1");
          a = linear(in, *w1, *b1);
        }
        {
          scope act("act");
          a = activation(a);
        }
        {
          scope inner("inner");
          auto inner_fn = [](const Tensor& t) { return t * tanh(t); };
          a = nested && policy != nullptr ? checkpoint(inner_fn, a, sac()) : inner_fn(a);
        }
        scope fc2("fc2");
        return in + linear(a, *w2, *b2);
      };
      h = policy != nullptr ? checkpoint(body, h, sac()) : body(h);
    }
  }
  Tensor loss = mean(h * h);
  loss.backward();
  std::vector<Tensor> grads;
  for (const Tensor& p : params) grads.push_back(p.grad().clone());  // the optimizer may change them
  if (m.adamw) {
    optim::AdamW opt(params, optim::AdamWOptions(1e-2));
    opt.step();
  } else {
    optim::SGD opt(params, optim::SGDOptions(0.1));
    opt.step();
  }
  r.peak = max_memory_allocated(device) - start;  // before reading values (which copies)
  r.flops = checkpoint_stats().total.flops_recomputed;
  if (!device.is_meta()) {
    r.loss_and_grads.push_back(loss.item());
    for (const Tensor& g : grads)
      for (double v : g.to_vector()) r.loss_and_grads.push_back(v);
    for (const Tensor& p : params)
      for (double v : p.to_vector()) r.loss_and_grads.push_back(v);
  }
  return r;
}

PlannedStep planned_step(const Model& m) {
  if (m.family == Family::Gpt) return remat::testing::planned_gpt_step(m.gpt);
  return [m](const PolicyFn& policy, Device device) { mlp_step(m, &policy, device); };
}

// The real step on the CPU: no checkpointing (plan == nullptr) or under the plan's policy.
remat::testing::StepResult real_step(const Model& m, const CheckpointPlan* plan) {
  if (m.family == Family::Gpt)
    return remat::testing::gpt_train_step(m.gpt, Device{kCPU}, plan != nullptr ? nn::ActivationCheckpointing::planned(*plan)
                                                                               : nn::ActivationCheckpointing::none());
  if (plan == nullptr) return mlp_step(m, nullptr, Device{kCPU});
  const PolicyFn policy = plan->policy();
  return mlp_step(m, &policy, Device{kCPU});
}

PlannerOptions options(const Model& m, int64_t budget) {
  PlannerOptions o{budget};
  o.max_dry_runs = m.max_dry_runs;
  // A fixed machine for the cost model (two AVX-512 cores), not the defaults measured once per
  // process: a plan is reproducible for given options, and the second process must see the same.
  o.peak_flops = 4.9e11;
  o.bandwidth = 1.2e10;
  return o;
}

struct Budgets {
  int64_t lo = 0, hi = 0, smaller = 0, larger = 0;
};

// Two budgets in the feasible range [lo, hi] (the larger one sometimes keep-all's peak or more).
Budgets random_budgets(const Model& m) {
  CheckpointPlan bounds = plan_checkpointing(planned_step(m), options(m, int64_t{1} << 40));
  Rng rng(m.seed ^ 0x9e3779b97f4a7c15ull);
  Budgets b;
  b.lo = bounds.recompute_all_peak_bytes;
  b.hi = bounds.keep_all_peak_bytes;
  b.smaller = b.lo + rng.range(0, b.hi - b.lo);
  const int64_t r = rng.range(0, 9);
  b.larger = r == 0 ? b.smaller : r == 1 ? b.hi + rng.range(0, 1000) : b.smaller + rng.range(0, b.hi - b.smaller);
  return b;
}

uint64_t base_seed() { return static_cast<uint64_t>(env_int("REMAT_PLANNER_PROPERTY_SEED", 20240623)); }
int64_t case_count() { return env_int("REMAT_PLANNER_PROPERTY_CASES", 100); }
uint64_t case_seed(int64_t i) { return base_seed() + 1000003ull * static_cast<uint64_t>(i); }

// The digest of the plan for the smaller budget of every case, as "<case> <digest>" lines.
std::string digests_of(const std::vector<uint64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += std::to_string(i) + " " + std::to_string(d[i]) + "\n";
  return s;
}

std::vector<uint64_t> plan_digests_afresh() {
  std::vector<uint64_t> d;
  for (int64_t i = 0; i < case_count(); ++i) {
    const Model m = random_model(case_seed(i));
    const Budgets b = random_budgets(m);
    d.push_back(remat::testing::digest(plan_fingerprint(plan_checkpointing(planned_step(m), options(m, b.smaller)))));
  }
  return d;
}

}  // namespace

TEST_CASE("planner properties: random models and budgets, exact, bitwise, monotone, reproducible",
          "[planner][property]") {
  const int64_t cases = case_count();
  std::vector<uint64_t> digests;
  std::map<std::string, int> by_family;
  int64_t budgets_checked = 0, searched = 0;
  for (int64_t i = 0; i < cases; ++i) {
    const Model m = random_model(case_seed(i));
    INFO("case " << i << ": " << m.describe() << "; run it alone with REMAT_PLANNER_PROPERTY_SEED=" << m.seed
                 << " REMAT_PLANNER_PROPERTY_CASES=1");
    ++by_family[toString(m.family)];
    const Budgets b = random_budgets(m);
    INFO("feasible [" << b.lo << ", " << b.hi << "], budgets " << b.smaller << " <= " << b.larger);
    REQUIRE(b.lo <= b.hi);
    const PlannedStep step = planned_step(m);
    const CheckpointPlan small = plan_checkpointing(step, options(m, b.smaller));
    const CheckpointPlan large = plan_checkpointing(step, options(m, b.larger));
    const CheckpointPlan again = plan_checkpointing(step, options(m, b.smaller));
    budgets_checked += 2;
    if (b.lo < b.smaller && b.smaller < b.hi) ++searched;
    CHECK(plan_fingerprint(again) == plan_fingerprint(small));  // the same plan when made twice
    digests.push_back(remat::testing::digest(plan_fingerprint(small)));
    CHECK(large.predicted_overhead_seconds <= small.predicted_overhead_seconds);  // monotone in the budget
    CHECK(small.dry_runs <= m.max_dry_runs);
    CHECK(large.dry_runs <= m.max_dry_runs);

    const remat::testing::StepResult plain = real_step(m, nullptr);
    for (const CheckpointPlan* plan : {&small, &large}) {
      INFO("budget " << plan->budget_bytes << ": " << plan->kept.size() << " kept of " << plan->candidates.size());
      CHECK(plan->predicted_peak_bytes <= plan->budget_bytes);
      const remat::testing::StepResult real = real_step(m, plan);
      CHECK(real.peak == plan->predicted_peak_bytes);
      CHECK(real.peak <= plan->budget_bytes);
      CHECK(real.flops == plan->recompute_flops);
      CHECK(bitwise_equal(real.loss_and_grads, plain.loss_and_grads));
    }
  }
  // Every family drawn, and most budgets inside a range where the search runs.
  CHECK(by_family.size() == (cases >= 12 ? 3u : by_family.size()));
  CHECK(searched * 2 >= cases);
  WARN(cases << " random models (" << by_family["gpt"] << " GPTs, " << by_family["mlp"] << " MLPs, "
             << by_family["mlp+custom-op"] << " MLPs with a custom op), " << budgets_checked << " budgets ("
             << searched << " models searched inside their range)");

  // In another process: the same binary plans every model afresh and prints the digests.
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  exe[len] = '\0';
  const std::string command = "REMAT_PLANNER_PROPERTY_SEED=" + std::to_string(base_seed()) +
                              " REMAT_PLANNER_PROPERTY_CASES=" + std::to_string(cases) + " '" + exe +
                              "' '[.planner_digests]' 2>&1";
  FILE* child = popen(command.c_str(), "r");
  REQUIRE(child != nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, child) != nullptr) out += buf;
  const int status = pclose(child);
  INFO("the second process: " << command << "\n" << out);
  CHECK(status == 0);
  const std::string begin = "digests:\n", end = "end of digests\n";
  const size_t from = out.find(begin), to = out.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  CHECK(out.substr(from + begin.size(), to - from - begin.size()) == digests_of(digests));
}

// Run by the test above in a second process (hidden: not run on its own).
TEST_CASE("planner properties: the plans' digests, made afresh", "[.planner_digests]") {
  const std::string d = digests_of(plan_digests_afresh());
  std::printf("digests:\n%send of digests\n", d.c_str());
  std::fflush(stdout);
  SUCCEED();
}
