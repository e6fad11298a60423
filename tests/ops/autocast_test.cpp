// Tests ops/autocast.cpp: the autocast state (thread-local, get/set round trip, nested guards,
// bad arguments) and the Autocast-key kernels (lower-precision list runs in the autocast dtype,
// float32 list runs in float32, gradients reach float32 leaves as float32).
#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "ops/linalg_defs.h"
#include "ops/loss_defs.h"
#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {

// Records the dtypes of the floating tensor arguments of every op it sees (but the casts).
struct DtypeProbe : DispatchMode {
  std::vector<std::pair<std::string, std::vector<ScalarType>>> seen;
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    std::vector<ScalarType> dts;
    for (const IValue& a : args)
      if (a.isTensor() && a.toTensor().defined() && isFloatingType(a.toTensor().dtype())) dts.push_back(a.toTensor().dtype());
    if (op.name() != "aten::_to_copy") seen.emplace_back(op.name(), dts);
    return op.call(args);
  }
  // Every floating argument of every op seen (but the casts) had this dtype.
  bool all(ScalarType dt) const {
    for (const auto& [name, dts] : seen)
      for (ScalarType d : dts)
        if (d != dt) return false;
    return !seen.empty();
  }
  std::string describe() const {
    std::string s;
    for (const auto& [name, dts] : seen) {
      s += name + "(";
      for (ScalarType d : dts) s += std::string(toString(d)) + " ";
      s += ") ";
    }
    return s;
  }
};

}  // namespace

TEST_CASE("autocast state: defaults, guard, get/set round trip", "[autocast]") {
  CHECK_FALSE(is_autocast_enabled(kCPU));
  CHECK(get_autocast_dtype(kCPU) == kBFloat16);
  AutocastState before = get_autocast_state();
  {
    autocast guard(kCPU);
    CHECK(is_autocast_enabled(kCPU));
    CHECK(get_autocast_dtype(kCPU) == kBFloat16);
    CHECK_FALSE(is_autocast_enabled(kCUDA));
    CHECK(get_autocast_state() != before);
  }
  CHECK(get_autocast_state() == before);
  CHECK_FALSE(is_autocast_enabled(kCPU));
  // set_autocast_state / get_autocast_state round trip (what checkpoint saves and restores)
  AutocastState s;
  s.enabled[static_cast<int>(kCPU)] = true;
  s.dtype[static_cast<int>(kCPU)] = kHalf;
  set_autocast_state(s);
  CHECK(get_autocast_state() == s);
  CHECK(is_autocast_enabled(kCPU));
  CHECK(get_autocast_dtype(kCPU) == kHalf);
  CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kHalf);  // the state drives the kernels
  set_autocast_state(before);
  CHECK(get_autocast_state() == before);
  CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kFloat);
}

TEST_CASE("autocast guards nest and restore", "[autocast]") {
  {
    autocast outer(kCPU, kBFloat16);
    {
      autocast inner(kCPU, kHalf);
      CHECK(get_autocast_dtype(kCPU) == kHalf);
      CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kHalf);
      {
        autocast off(kCPU, kBFloat16, /*enabled=*/false);
        CHECK_FALSE(is_autocast_enabled(kCPU));
        CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kFloat);
      }
      CHECK(is_autocast_enabled(kCPU));
      CHECK(get_autocast_dtype(kCPU) == kHalf);
    }
    CHECK(get_autocast_dtype(kCPU) == kBFloat16);
    CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kBFloat16);
  }
  CHECK_FALSE(is_autocast_enabled(kCPU));
  CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kFloat);
  // a guard unwinds on an exception too
  try {
    autocast g(kCPU);
    mm(ones({2, 3}), ones({2, 3}));
  } catch (const Error&) {
  }
  CHECK_FALSE(is_autocast_enabled(kCPU));
}

TEST_CASE("autocast state is thread-local", "[autocast]") {
  autocast guard(kCPU);
  bool other_enabled = true;
  ScalarType other_dtype = kFloat;
  std::thread t([&] {
    other_enabled = is_autocast_enabled(kCPU);
    other_dtype = mm(ones({2, 2}), ones({2, 2})).dtype();
    autocast inner(kCPU, kHalf);  // does not leak into the main thread
  });
  t.join();
  CHECK_FALSE(other_enabled);
  CHECK(other_dtype == kFloat);
  CHECK(get_autocast_dtype(kCPU) == kBFloat16);
  CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kBFloat16);
}

TEST_CASE("autocast(kCPU, kBFloat16): mm, bmm, matmul, addmm, linear run in bf16", "[autocast]") {
  Tensor a = randn_seeded({4, 8}, 1, kFloat), b = randn_seeded({8, 3}, 2, kFloat);
  Tensor bias = randn_seeded({3}, 3, kFloat);
  Tensor ba = randn_seeded({2, 4, 8}, 4, kFloat), bb = randn_seeded({2, 8, 3}, 5, kFloat);
  Tensor w = b.t().contiguous();
  std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
      {"mm", [&] { return mm(a, b); }},
      {"bmm", [&] { return bmm(ba, bb); }},
      {"matmul", [&] { return matmul(ba, b); }},
      {"addmm", [&] { return addmm(bias, a, b); }},
      {"linear", [&] { return linear(a, w, bias); }},
      {"linear 3-D no bias", [&] { return linear(ba, w); }},
  };
  for (auto& [name, f] : ops) {
    INFO(name);
    Tensor ref = f();
    auto probe = std::make_shared<DtypeProbe>();
    Tensor got;
    {
      autocast guard(kCPU, kBFloat16);
      DispatchModeGuard mode(probe);
      got = f();
    }
    CHECK(got.dtype() == kBFloat16);
    CHECK(ref.dtype() == kFloat);
    INFO(probe->describe());
    CHECK(probe->all(kBFloat16));  // the matrix product itself ran on bf16 operands
    std::vector<double> g = got.to_vector(), r = ref.to_vector();
    for (size_t i = 0; i < g.size(); ++i) CHECK(std::abs(g[i] - r[i]) <= 5e-2 + 2e-2 * std::abs(r[i]));
  }
  // mixed inputs are cast to the autocast dtype; already-bf16 inputs are not cast again
  autocast guard(kCPU);
  CHECK(mm(a.to(kBFloat16), b).dtype() == kBFloat16);
  auto probe = std::make_shared<RecordingMode>();
  {
    DispatchModeGuard mode(probe);
    mm(a.to(kBFloat16), b.to(kBFloat16));
  }
  CHECK(probe->calls["aten::_to_copy"] == 2);  // the two .to() above, no casts by autocast
}

TEST_CASE("autocast leaves float64, integer and non-listed ops alone", "[autocast]") {
  autocast guard(kCPU);
  // PyTorch casts only floating tensors that are not float64
  Tensor d = randn_seeded({2, 2}, 6, kDouble);
  CHECK(mm(d, d).dtype() == kDouble);
  check_close(mm(d, d), [&] {
    autocast off(kCPU, kBFloat16, false);
    return mm(d, d);
  }(), 1e-12);
  // ops outside both lists run in their input dtype
  Tensor f = ones({2, 2});
  CHECK(add(f, f).dtype() == kFloat);
  CHECK(sin(f).dtype() == kFloat);
  CHECK(sum(f).dtype() == kFloat);
  // Meta tensors follow Meta's own autocast state (off here)
  CHECK(mm(meta({2, 2}), meta({2, 2})).dtype() == kFloat);
}

TEST_CASE("autocast(kMeta) casts Meta tensors by the same lists (a dry run of an autocast step)", "[autocast]") {
  autocast guard(kMeta, kBFloat16);
  CHECK(mm(meta({2, 2}), meta({2, 2})).dtype() == kBFloat16);
  CHECK(softmax(meta({2, 2}).to(kBFloat16), -1).dtype() == kFloat);
  CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == kFloat);  // CPU tensors: CPU autocast is off
}

TEST_CASE("autocast: gradients flow back to float32 leaves as float32", "[autocast][autograd]") {
  Tensor x = randn_seeded({4, 8}, 11, kFloat).requires_grad_();
  Tensor w = randn_seeded({3, 8}, 12, kFloat).requires_grad_();
  Tensor b = randn_seeded({3}, 13, kFloat).requires_grad_();
  Tensor y;
  {
    autocast guard(kCPU);
    y = linear(x, w, b);
  }
  CHECK(y.dtype() == kBFloat16);
  mul(sin(y), 2.0).sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == kFloat);
  CHECK(w.grad().dtype() == kFloat);
  CHECK(b.grad().dtype() == kFloat);
  // against the float32 computation, within bf16 tolerance
  Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_(), b2 = b.detach().requires_grad_();
  mul(sin(linear(x2, w2, b2)), 2.0).sum().backward();
  for (auto [got, want] : {std::pair{x.grad(), x2.grad()}, std::pair{w.grad(), w2.grad()}, std::pair{b.grad(), b2.grad()}}) {
    std::vector<double> g = got.to_vector(), r = want.to_vector();
    for (size_t i = 0; i < g.size(); ++i) CHECK(std::abs(g[i] - r[i]) <= 0.1 + 3e-2 * std::abs(r[i]));
  }
  // the graph records the casts
  CHECK(y.grad_fn() != nullptr);
}

TEST_CASE("autocast: the float32 list (softmax, log_softmax, layer_norm, rms_norm, cross_entropy) "
          "receives float32 inputs", "[autocast]") {
  Tensor x = randn_seeded({4, 6}, 21, kBFloat16);
  Tensor w = ones({6}, kBFloat16), bias = zeros({6}, kBFloat16);
  Tensor targets = tensor({0, 5, 2, 3}, {4}, kLong);
  std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
      {"softmax", [&] { return softmax(x, -1); }},
      {"log_softmax", [&] { return log_softmax(x, 1); }},
      {"layer_norm", [&] { return layer_norm(x, {6}, w, bias); }},
      {"rms_norm", [&] { return rms_norm(x, {6}, w); }},
      {"cross_entropy", [&] { return cross_entropy(x, targets); }},
  };
  for (auto& [name, f] : ops) {
    INFO(name);
    auto probe = std::make_shared<DtypeProbe>();
    Tensor out;
    {
      autocast guard(kCPU, kBFloat16);
      DispatchModeGuard mode(probe);
      out = f();
    }
    INFO(probe->describe());
    CHECK(probe->all(kFloat));
    CHECK(out.dtype() == kFloat);
    // and without autocast nothing is cast
    auto plain = std::make_shared<DtypeProbe>();
    {
      DispatchModeGuard mode(plain);
      f();
    }
    // (rms_norm's CPU composite computes in float32 by itself, as PyTorch's: its first op casts up)
    if (std::string(name) != "rms_norm") CHECK(plain->all(kBFloat16));
  }
}

TEST_CASE("autocast error paths", "[autocast][errors]") {
  REQUIRE_THROWS_WITH(autocast(kCPU, kDouble), Contains("autocast") && Contains("target dtype is not supported") && Contains("Double"));
  REQUIRE_THROWS_WITH(autocast(kCPU, kLong), Contains("Long"));
  CHECK_FALSE(is_autocast_enabled(kCPU));  // a failed guard changes nothing
  // errors inside an autocast op still name the op
  autocast guard(kCPU);
  REQUIRE_THROWS_WITH(mm(ones({2, 3}), ones({2, 3})), Contains("aten::mm") && Contains("2x3 and 2x3"));
}

TEST_CASE("autocast kernels: the Defs' policies and the composites' names give PyTorch's lists", "[autocast]") {
  // the ops with an Autocast kernel of their own (the others fall through), by policy: the Defs
  // give theirs (autocast_policy), the composites are listed by name
  std::set<std::string> with_kernel;
  for (const std::string& name : registered_ops())
    if (name.rfind("aten::", 0) == 0 && find_op(name).entry()->hasKernelForKey(DispatchKey::Autocast))
      with_kernel.insert(name);
  CHECK(with_kernel == std::set<std::string>{"aten::mm", "aten::bmm", "aten::matmul", "aten::addmm", "aten::linear",
                                             "aten::_softmax", "aten::_log_softmax", "aten::layer_norm",
                                             "aten::rms_norm", "aten::cross_entropy"});
  CHECK(ops::structured_mm::autocast_policy == ops::CastPolicy::LowerPrecision);
  CHECK(ops::structured_cross_entropy::autocast_policy == ops::CastPolicy::Float32);
  // the policy each kernel applies: mm (a Def) runs in the autocast dtype, log_softmax in float32
  autocast guard(kCPU, kBFloat16);
  Tensor a = ones({2, 2});
  CHECK(mm(a, a).dtype() == kBFloat16);
  CHECK(log_softmax(a.to(kBFloat16), 1).dtype() == kFloat);
}
