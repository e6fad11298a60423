// A randomized differential test of checkpoint/ as a whole (checkpoint.cpp, frame.cpp,
// reentrant.cpp, selective.cpp, policies.cpp together; no single source file owns it).
//
// Each case is a random program: a DAG of ops on small float64 matrices (in-place ones among
// them, some through views of a fresh clone), run once plainly and once with random checkpoint
// regions (sometimes nested, reentrant or not, early stop on or off) under random
// selective-checkpoint policies. Where every region is non-reentrant the recorded
// graph is the same, so the gradients must be bitwise equal; a reentrant region runs its own
// backward and changes the order in which gradient contributions are summed, so there they must
// agree to 1e-12 of the gradient's largest magnitude. Seeded (REMAT_DIFF_SEED overrides the base
// seed, REMAT_DIFF_CASES the count); a failure prints the seed and the program.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>

#include "remat.h"

using namespace remat;

namespace {

enum class Kind { Unary, Binary, MatMul, Transpose, Scale, RandMul, SumExpand, InplaceAdd, InplaceOnView, TanhExp };

struct Step {
  Kind kind;
  std::string op;  // for Unary / Binary
  int a = 0, b = 0;
  double scalar = 1.0;
};

struct Region {
  int begin = 0, end = 0;  // step range [begin, end)
  bool reentrant = false;
  bool early_stop = true;
  int policy = 0;  // 0 vanilla, 1 save a list, 2 every other mm, 3 random per call, 4 save all
  std::vector<std::string> save_list;
  uint64_t policy_seed = 0;
  std::vector<Region> children;
};

struct Program {
  uint64_t seed = 0;
  int n = 3;
  int inputs = 2;
  std::vector<Step> steps;
  std::vector<Region> regions;
  std::vector<int> loss_terms;

  int id_of_step(int i) const { return inputs + i; }
  bool any_reentrant() const {
    std::function<bool(const std::vector<Region>&)> rec = [&](const std::vector<Region>& rs) {
      for (const Region& r : rs)
        if (r.reentrant || rec(r.children)) return true;
      return false;
    };
    return rec(regions);
  }
  std::string str() const;
};

std::string step_str(const Program& p, int i) {
  const Step& s = p.steps[static_cast<size_t>(i)];
  std::ostringstream os;
  os << "v" << p.id_of_step(i) << " = ";
  switch (s.kind) {
    case Kind::Unary: os << s.op << "(v" << s.a << ")"; break;
    case Kind::Binary: os << s.op << "(v" << s.a << ", v" << s.b << ")"; break;
    case Kind::MatMul: os << "mm(v" << s.a << ", v" << s.b << ")"; break;
    case Kind::Transpose: os << "transpose(v" << s.a << ")"; break;
    case Kind::Scale: os << "v" << s.a << " * " << s.scalar; break;
    case Kind::RandMul: os << "v" << s.a << " * rand()"; break;
    case Kind::SumExpand: os << "expand(sum(v" << s.a << ", dim 0, keepdim))"; break;
    case Kind::InplaceAdd: os << "clone(v" << s.a << ").add_(v" << s.b << ")"; break;
    case Kind::InplaceOnView:
      os << "clone(v" << s.a << ") with row 0 *= row 0 of v" << s.b << ", then column -1 += column 0 of v" << s.b;
      break;
    case Kind::TanhExp: os << "exp(tanh(v" << s.a << "))"; break;
  }
  return os.str();
}

std::string Program::str() const {
  std::ostringstream os;
  os << "program seed " << seed << ": " << inputs << " inputs of shape [" << n << ", " << n << "]\n";
  for (size_t i = 0; i < steps.size(); ++i) os << "  " << step_str(*this, static_cast<int>(i)) << "\n";
  std::function<void(const std::vector<Region>&, int)> rec = [&](const std::vector<Region>& rs, int depth) {
    for (const Region& r : rs) {
      os << std::string(static_cast<size_t>(2 * depth + 2), ' ') << "checkpoint steps [" << r.begin << ", " << r.end
         << ") " << (r.reentrant ? "reentrant" : "non-reentrant") << " early_stop=" << r.early_stop
         << " policy=" << r.policy;
      for (const auto& s : r.save_list) os << " " << s;
      os << "\n";
      rec(r.children, depth + 1);
    }
  };
  rec(regions, 0);
  os << "  loss = sum of";
  for (int t : loss_terms) os << " v" << t;
  return os.str() + "\n";
}

// Random regions over [begin, end): a few disjoint ranges, each maybe with nested children.
std::vector<Region> random_regions(std::mt19937_64& rng, int begin, int end, int depth, bool inside_reentrant) {
  std::vector<Region> out;
  int pos = begin;
  while (pos < end) {
    int len_max = end - pos;
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0 || len_max < 1) {
      ++pos;
      continue;
    }
    int len = std::uniform_int_distribution<int>(1, len_max)(rng);
    Region r;
    r.begin = pos;
    r.end = pos + len;
    r.reentrant = !inside_reentrant && std::uniform_int_distribution<int>(0, 3)(rng) == 0;
    r.early_stop = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    r.policy = r.reentrant ? 0 : std::uniform_int_distribution<int>(0, 4)(rng);
    r.policy_seed = rng();
    if (r.policy == 1) {
      const char* ops[] = {"aten::mm", "aten::sin", "aten::mul", "aten::add", "aten::tanh", "aten::exp", "aten::sum"};
      for (const char* o : ops)
        if (std::uniform_int_distribution<int>(0, 1)(rng)) r.save_list.push_back(o);
    }
    if (depth < 2 && len >= 2 && std::uniform_int_distribution<int>(0, 1)(rng))
      r.children = random_regions(rng, r.begin, r.end, depth + 1, inside_reentrant || r.reentrant);
    out.push_back(r);
    pos = r.end;
  }
  return out;
}

Program random_program(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Program p;
  p.seed = seed;
  p.n = std::uniform_int_distribution<int>(2, 5)(rng);
  p.inputs = std::uniform_int_distribution<int>(1, 3)(rng);
  int nsteps = std::uniform_int_distribution<int>(3, 12)(rng);
  const char* unary[] = {"sin", "cos", "tanh", "sigmoid", "relu", "neg"};
  const char* binary[] = {"add", "sub", "mul"};
  for (int i = 0; i < nsteps; ++i) {
    int avail = p.inputs + i;
    auto pick = [&] { return std::uniform_int_distribution<int>(0, avail - 1)(rng); };
    Step s;
    switch (std::uniform_int_distribution<int>(0, 10)(rng)) {
      case 0: case 1: case 2: s.kind = Kind::Unary; s.op = unary[std::uniform_int_distribution<int>(0, 5)(rng)]; s.a = pick(); break;
      case 3: case 4: s.kind = Kind::Binary; s.op = binary[std::uniform_int_distribution<int>(0, 2)(rng)]; s.a = pick(); s.b = pick(); break;
      case 5: case 6: s.kind = Kind::MatMul; s.a = pick(); s.b = pick(); break;
      case 7: s.kind = std::uniform_int_distribution<int>(0, 1)(rng) ? Kind::Transpose : Kind::TanhExp; s.a = pick(); break;
      case 8: s.kind = Kind::Scale; s.a = pick(); s.scalar = std::uniform_real_distribution<double>(-1.5, 1.5)(rng); break;
      case 9: s.kind = std::uniform_int_distribution<int>(0, 1)(rng) ? Kind::RandMul : Kind::SumExpand; s.a = pick(); break;
      default:
        s.kind = std::uniform_int_distribution<int>(0, 1)(rng) ? Kind::InplaceAdd : Kind::InplaceOnView;
        s.a = pick();
        s.b = pick();
        break;
    }
    p.steps.push_back(s);
  }
  p.regions = random_regions(rng, 0, nsteps, 0, false);
  int total = p.inputs + nsteps;
  p.loss_terms.push_back(total - 1);
  for (int v = p.inputs; v < total - 1; ++v)
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) p.loss_terms.push_back(v);
  return p;
}

Tensor run_step(const Step& s, const std::vector<Tensor>& v, int n) {
  switch (s.kind) {
    case Kind::Unary:
      if (s.op == "sin") return v[static_cast<size_t>(s.a)].sin();
      if (s.op == "cos") return v[static_cast<size_t>(s.a)].cos();
      if (s.op == "tanh") return v[static_cast<size_t>(s.a)].tanh();
      if (s.op == "sigmoid") return v[static_cast<size_t>(s.a)].sigmoid();
      if (s.op == "relu") return v[static_cast<size_t>(s.a)].relu();
      return -v[static_cast<size_t>(s.a)];
    case Kind::Binary: {
      const Tensor& a = v[static_cast<size_t>(s.a)];
      const Tensor& b = v[static_cast<size_t>(s.b)];
      return s.op == "add" ? a + b : s.op == "sub" ? a - b : a * b;
    }
    case Kind::MatMul: return mm(v[static_cast<size_t>(s.a)], v[static_cast<size_t>(s.b)]) * (1.0 / n);
    case Kind::Transpose: return v[static_cast<size_t>(s.a)].t();
    case Kind::Scale: return v[static_cast<size_t>(s.a)] * s.scalar;
    case Kind::RandMul: return v[static_cast<size_t>(s.a)] * rand({n, n}, kDouble);
    case Kind::SumExpand: return v[static_cast<size_t>(s.a)].sum({0}, true).expand({n, n});
    case Kind::InplaceAdd: {
      Tensor t = v[static_cast<size_t>(s.a)].clone();
      t.add_(v[static_cast<size_t>(s.b)]);
      return t;
    }
    case Kind::InplaceOnView: {  // through views: CopySlices, views of views, regenerated grad_fns
      Tensor t = v[static_cast<size_t>(s.a)].clone();
      const Tensor& b = v[static_cast<size_t>(s.b)];
      t.narrow(0, 0, 1).mul_(b.narrow(0, 0, 1));
      t.t().select(0, n - 1).add_(b.select(1, 0));
      return t;
    }
    case Kind::TanhExp: return v[static_cast<size_t>(s.a)].tanh().exp();
  }
  return Tensor();
}

// Programs mutate a fresh clone in place, directly (InplaceAdd) or through views of it
// (InplaceOnView); a policy that saved that clone or one of those views would trip SAC's "cached
// tensor has been mutated" check (rightly: its replay would be wrong), so every policy here
// recomputes them.
PolicyFn never_save_mutated(PolicyFn p) {
  return [p](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>& args) {
    for (const char* mutated : {"aten::clone", "aten::slice", "aten::select", "aten::transpose", "aten::t"})
      if (op.name() == mutated) return CheckpointPolicy::MUST_RECOMPUTE;
    return p(ctx, op, args);
  };
}

CheckpointContexts contexts_for(const Region& r) {
  switch (r.policy) {
    case 1: {
      std::vector<std::string> ops = r.save_list;
      if (ops.empty()) ops.push_back("aten::mm");
      return create_selective_checkpoint_contexts(never_save_mutated(policies::save_ops(ops)));
    }
    case 2: return create_selective_checkpoint_contexts(never_save_mutated(policies::save_every_other({"aten::mm"})));
    case 3: {
      auto rng = std::make_shared<std::mt19937_64>(r.policy_seed);
      return create_selective_checkpoint_contexts(never_save_mutated(
          PolicyFn([rng](const SelectiveCheckpointContext&, const OperatorHandle&, const std::vector<IValue>&) {
            return (*rng)() % 2 ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
          })));
    }
    default: return create_selective_checkpoint_contexts(never_save_mutated(policies::save_all()));
  }
}

// Runs steps [begin, end) on env (value id -> tensor), checkpointing the given regions.
void run_range(const Program& p, int begin, int end, const std::vector<Region>& regions, std::vector<Tensor>& env,
               bool checkpointed) {
  int pos = begin;
  while (pos < end) {
    const Region* r = nullptr;
    if (checkpointed)
      for (const Region& c : regions)
        if (c.begin == pos) r = &c;
    if (r == nullptr) {
      env[static_cast<size_t>(p.id_of_step(pos))] = run_step(p.steps[static_cast<size_t>(pos)], env, p.n);
      ++pos;
      continue;
    }
    // Region inputs: every value defined before the region (simple and always sufficient).
    const int defined = p.id_of_step(r->begin);
    std::vector<Tensor> inputs(env.begin(), env.begin() + defined);
    const Region region = *r;
    CheckpointFn fn = [&p, region, defined](const std::vector<Tensor>& args) {
      std::vector<Tensor> local(static_cast<size_t>(p.inputs + static_cast<int>(p.steps.size())));
      for (int i = 0; i < defined; ++i) local[static_cast<size_t>(i)] = args[static_cast<size_t>(i)];
      run_range(p, region.begin, region.end, region.children, local, true);
      return std::vector<Tensor>(local.begin() + defined, local.begin() + p.id_of_step(region.end));
    };
    CheckpointOptions o;
    o.use_reentrant = region.reentrant;
    o.early_stop = region.early_stop;
    if (region.policy != 0) o.context_fn = [region] { return contexts_for(region); };
    std::vector<Tensor> outs = checkpoint(fn, inputs, o);
    for (int i = 0; i < region.end - region.begin; ++i) env[static_cast<size_t>(defined + i)] = outs[static_cast<size_t>(i)];
    pos = region.end;
  }
}

std::vector<Tensor> gradients(const Program& p, bool checkpointed) {
  manual_seed(p.seed);
  std::vector<Tensor> leaves;
  for (int i = 0; i < p.inputs; ++i) leaves.push_back((rand({p.n, p.n}, kDouble) * 2.0 - 1.0).detach().requires_grad_());
  std::vector<Tensor> env(static_cast<size_t>(p.inputs + static_cast<int>(p.steps.size())));
  for (int i = 0; i < p.inputs; ++i) env[static_cast<size_t>(i)] = leaves[static_cast<size_t>(i)];
  run_range(p, 0, static_cast<int>(p.steps.size()), p.regions, env, checkpointed);
  Tensor loss = env[static_cast<size_t>(p.loss_terms[0])].sum();
  for (size_t i = 1; i < p.loss_terms.size(); ++i) loss = loss + env[static_cast<size_t>(p.loss_terms[i])].sum();
  if (!loss.requires_grad()) return {};
  loss.backward();
  std::vector<Tensor> grads;
  for (const Tensor& l : leaves) grads.push_back(l.grad());
  return grads;
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

TEST_CASE("random programs: checkpointed gradients equal plain ones", "[checkpoint][differential]") {
  const uint64_t base = env_u64("REMAT_DIFF_SEED", 20261129);
  const uint64_t cases = env_u64("REMAT_DIFF_CASES", 200);
  int with_reentrant = 0, nested = 0, with_sac = 0, views_in_regions = 0;
  for (uint64_t c = 0; c < cases; ++c) {
    Program p = random_program(base + c);
    for (const Region& r : p.regions) {
      nested += r.children.empty() ? 0 : 1;
      with_sac += r.policy != 0 ? 1 : 0;
      for (int i = r.begin; i < r.end; ++i) views_in_regions += p.steps[static_cast<size_t>(i)].kind == Kind::InplaceOnView;
    }
    bool reentrant = p.any_reentrant();
    with_reentrant += reentrant ? 1 : 0;
    std::vector<Tensor> expected, got;
    try {
      expected = gradients(p, false);
      got = gradients(p, true);
    } catch (const std::exception& e) {
      FAIL("seed " << p.seed << " threw: " << e.what() << "\n" << p.str());
    }
    REQUIRE(expected.size() == got.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      if (!expected[i].defined() && !got[i].defined()) continue;
      INFO(p.str() << "input " << i << "\nexpected " << expected[i] << "\ngot      " << got[i]);
      if (reentrant && expected[i].defined() != got[i].defined()) {
        // A reentrant region hands zeros (not "no gradient") to inputs of outputs nobody used,
        // as PyTorch's CheckpointFunction does (its backward materializes missing gradients).
        const Tensor& present = expected[i].defined() ? expected[i] : got[i];
        // Zero by value: a sign-flipping op downstream may make it -0.
        REQUIRE(allclose(present, zeros_like(present), 0.0, 0.0));
        continue;
      }
      REQUIRE(expected[i].defined() == got[i].defined());
      if (!reentrant) {
        REQUIRE(equal(expected[i], got[i]));
      } else {
        std::vector<double> a = expected[i].to_vector(), b = got[i].to_vector();
        double scale = 0;
        for (double x : a) scale = std::max(scale, std::abs(x));
        for (size_t k = 0; k < a.size(); ++k) REQUIRE(std::abs(a[k] - b[k]) <= 1e-12 * std::max(scale, 1e-300));
      }
    }
  }
  // The generator must actually produce the variety the test claims to cover.
  REQUIRE(with_reentrant > 0);
  REQUIRE(nested > 0);
  REQUIRE(with_sac > 0);
  REQUIRE(views_in_regions > 0);
}
