// Mirrors test/test_python_dispatch.py (TorchDispatchMode tests).
// Tests engine/dispatch/dispatch_mode.cpp (the mode stack, DispatchModeGuard, the Python-key
// fallback that calls the innermost mode, stashing, DisableDispatchModesGuard).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::CountingMode;
using remat::testing::f64;
using remat::testing::values;

namespace {

// Logs "tag:op" and runs the op (the outer modes still apply).
struct TaggedMode : DispatchMode {
  TaggedMode(std::string tag, std::vector<std::string>* log) : tag_(std::move(tag)), log_(log) {}
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    log_->push_back(tag_ + ":" + op.name());
    stack_size_inside = DispatchModeTLS::size();
    return op.call(args);
  }
  std::string tag_;
  std::vector<std::string>* log_;
  size_t stack_size_inside = 0;
};

// Replaces every aten::sin result by a tensor of sevens.
struct ReplaceSin : DispatchMode {
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    if (op.name() == "aten::sin") {
      const Tensor& x = args[0].toTensor();
      std::vector<IValue> replaced;  // (not a braced list: GCC 12 -O1 warns on the variant copy)
      replaced.emplace_back(full(x.sizes(), 7.0, x.dtype()));
      return replaced;
    }
    return op.call(args);
  }
};

struct Throwing : DispatchMode {
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>&) override {
    throw Error("mode refused " + op.name());
  }
};

}  // namespace

TEST_CASE("A counting mode sees sin in forward, and cos and mul in backward", "[dispatch_mode]") {
  Tensor x = from_vector({0.5, 1.0, -2.0}, {3}, f64(true));
  Tensor gy = ones({3}, kDouble);
  auto mode = std::make_shared<CountingMode>();
  Tensor y;
  {
    DispatchModeGuard g(mode);
    y = x.sin();
  }
  REQUIRE(mode->calls == std::vector<std::string>{"aten::sin"});
  mode->clear();
  {
    DispatchModeGuard g(mode);
    y.backward(gy);
  }
  // SinBackward0: grad * cos(x)
  REQUIRE(mode->count("aten::cos") == 1);
  REQUIRE(mode->count("aten::mul") == 1);
  REQUIRE(mode->count("aten::sin") == 0);
  for (size_t i = 0; i < 3; ++i) REQUIRE(values(x.grad())[i] == Approx(std::cos(values(x)[i])).epsilon(1e-14));
}

TEST_CASE("Nested modes: the inner one sees an op first; its op.call goes to the outer", "[dispatch_mode]") {
  std::vector<std::string> log;
  auto outer = std::make_shared<TaggedMode>("outer", &log);
  auto inner = std::make_shared<TaggedMode>("inner", &log);
  Tensor x = ones({2}, kDouble);
  {
    DispatchModeGuard o(outer);
    DispatchModeGuard i(inner);
    REQUIRE(DispatchModeTLS::size() == 2);
    REQUIRE(DispatchModeTLS::stack().back() == inner);
    x.exp();
  }
  REQUIRE(log == std::vector<std::string>{"inner:aten::exp", "outer:aten::exp"});
  REQUIRE(inner->stack_size_inside == 1);  // the inner mode is stashed while it runs
  REQUIRE(outer->stack_size_inside == 0);
  REQUIRE(DispatchModeTLS::size() == 0);
}

TEST_CASE("A mode can replace an op's result; autograd still records the node below it", "[dispatch_mode]") {
  Tensor x = from_vector({0.1, 0.2}, {2}, f64(true));
  Tensor y;
  {
    DispatchModeGuard g(std::make_shared<ReplaceSin>());
    y = x.sin();
  }
  REQUIRE(values(y) == std::vector<double>{7, 7});
  REQUIRE(y.grad_fn() != nullptr);
  REQUIRE(y.grad_fn()->name() == "SinBackward0");
  y.backward(ones({2}, kDouble));
  // The node saved x before the mode ran: the gradient is the real one.
  REQUIRE(values(x.grad())[0] == Approx(std::cos(0.1)).epsilon(1e-14));
  REQUIRE(values(x.grad())[1] == Approx(std::cos(0.2)).epsilon(1e-14));
}

TEST_CASE("Modes run below autograd: inside a mode, Autograd is excluded", "[dispatch_mode]") {
  struct Probe : DispatchMode {
    bool autograd_excluded = false;
    bool grad_fn_inside = true;
    std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
      autograd_excluded = tls_local_dispatch_key_set().excluded.has(DispatchKey::Autograd);
      grad_fn_inside = args[0].toTensor().neg().grad_fn() != nullptr;  // a nested call records nothing
      return op.call(args);
    }
  };
  auto probe = std::make_shared<Probe>();
  Tensor x = ones({2}, f64(true));
  Tensor y;
  {
    DispatchModeGuard g(probe);
    y = x.exp();
  }
  REQUIRE(probe->autograd_excluded);
  REQUIRE_FALSE(probe->grad_fn_inside);
  REQUIRE(y.grad_fn()->name() == "ExpBackward0");
}

TEST_CASE("The mode stack and the Python key are restored after an exception", "[dispatch_mode]") {
  auto mode = std::make_shared<Throwing>();
  Tensor x = ones({2});
  {
    DispatchModeGuard g(mode);
    REQUIRE_THROWS_WITH(x.sin(), "mode refused aten::sin");
    REQUIRE(DispatchModeTLS::size() == 1);
    REQUIRE(DispatchModeTLS::stack()[0] == mode);  // stashed during the call, pushed back on unwind
    REQUIRE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
  }
  REQUIRE(DispatchModeTLS::size() == 0);
  REQUIRE_FALSE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
  try {
    DispatchModeGuard g(std::make_shared<CountingMode>());
    throw Error("leaving the scope by an exception");
  } catch (const Error&) {
  }
  REQUIRE(DispatchModeTLS::size() == 0);
  REQUIRE_FALSE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
  REQUIRE(values(x.sin())[0] == Approx(std::sin(1.0)));  // ops run normally again
}

TEST_CASE("DisableDispatchModesGuard sets the whole stack aside and restores it", "[dispatch_mode]") {
  auto outer = std::make_shared<CountingMode>();
  auto inner = std::make_shared<CountingMode>();
  Tensor x = ones({2});
  DispatchModeGuard o(outer);
  DispatchModeGuard i(inner);
  {
    DisableDispatchModesGuard off;
    REQUIRE(DispatchModeTLS::size() == 0);
    REQUIRE_FALSE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
    x.cos();
  }
  REQUIRE(DispatchModeTLS::size() == 2);
  REQUIRE(DispatchModeTLS::stack()[0] == outer);
  REQUIRE(DispatchModeTLS::stack()[1] == inner);
  REQUIRE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
  REQUIRE(inner->calls.empty());
  x.cos();
  REQUIRE(inner->calls == std::vector<std::string>{"aten::cos"});
  REQUIRE(outer->calls == std::vector<std::string>{"aten::cos"});
}

TEST_CASE("A mode that returns the wrong number of values is reported", "[dispatch_mode]") {
  struct TooMany : DispatchMode {
    std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
      std::vector<IValue> r = op.call(args);
      r.push_back(r[0]);
      return r;
    }
  };
  Tensor x = ones({2});
  DispatchModeGuard g(std::make_shared<TooMany>());
  REQUIRE_THROWS_WITH(x.sin(), "dispatch mode returned 2 values for aten::sin, which returns 1");
}

TEST_CASE("DispatchModeTLS push/pop errors", "[dispatch_mode]") {
  REQUIRE_THROWS_WITH(DispatchModeTLS::push(nullptr), "DispatchModeGuard: cannot push a null dispatch mode");
  REQUIRE_THROWS_WITH(DispatchModeTLS::pop(), "DispatchModeTLS::pop: the dispatch mode stack is empty");
  auto mode = std::make_shared<CountingMode>();
  DispatchModeTLS::push(mode);
  REQUIRE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
  REQUIRE(DispatchModeTLS::pop() == mode);
  REQUIRE_FALSE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
}

TEST_CASE("A mode sees the factories (aten::zeros, not its fill) and the in-place add of a second accumulation", "[dispatch_mode]") {
  auto mode = std::make_shared<CountingMode>();
  Tensor x = ones({2}, f64(true));
  (x * 2.0).sum().backward();
  {
    DispatchModeGuard g(mode);
    zeros({3});
    REQUIRE(mode->calls == std::vector<std::string>{"aten::zeros"});  // its fill_ runs below the mode
    mode->clear();
    (x * 3.0).sum().backward();  // .grad exists: accumulated in place
  }
  REQUIRE(mode->count("aten::add_") == 1);
  REQUIRE(values(x.grad()) == std::vector<double>{5, 5});
}

namespace {
// A boxed kernel above the Python key that redispatches with a value of its own below the
// arguments: the mode must see only the arguments, and the value must survive the call.
int g_sentinel_calls = 0;
void keep_sentinel(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  ++g_sentinel_calls;
  stack->insert(stack->begin(), IValue(int64_t{1234}));
  {
    ExcludeDispatchKeyGuard guard(DispatchKey::Autocast);
    op.redispatchBoxed(ks & DispatchKeySet::below(DispatchKey::Autocast), stack);
  }
  REQUIRE(stack->size() == 2);
  REQUIRE(stack->front().toInt() == 1234);
  stack->erase(stack->begin());
}
struct ArgCountMode : DispatchMode {
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    seen = args.size();
    return op.call(args);
  }
  size_t seen = 0;
};
Tensor mtest_neg_cpu(const Tensor& x) { return neg(x); }
}  // namespace

REMAT_LIBRARY_FRAGMENT(mtest, m) { m.def("neg(Tensor self) -> Tensor"); }
REMAT_LIBRARY_IMPL(mtest, CPU, m) { m.impl("neg", REMAT_FN(mtest_neg_cpu)); }
REMAT_LIBRARY_IMPL(mtest, Autocast, m) { m.impl("neg", KernelFunction::makeFromBoxedLambda(&keep_sentinel)); }

TEST_CASE("A mode sees only the op's arguments when the stack holds more below them", "[dispatch_mode]") {
  auto mode = std::make_shared<ArgCountMode>();
  Tensor x = full({2}, 3.0, kDouble);
  std::vector<IValue> rets;
  {
    IncludeDispatchKeyGuard autocast(DispatchKey::Autocast);
    DispatchModeGuard g(mode);
    rets = find_op("mtest::neg").call({x});
  }
  REQUIRE(g_sentinel_calls == 1);
  REQUIRE(mode->seen == 1);
  REQUIRE(rets.size() == 1);
  REQUIRE(values(rets[0].toTensor()) == std::vector<double>{-3.0, -3.0});
}

namespace {
// Two ops of one signature, for modes that forward, change or redirect a typed call.
int g_scale_calls = 0;
Tensor ftest_scale_cpu(const Tensor& x, double factor) {
  ++g_scale_calls;
  return mul(x, full(x.sizes(), factor, x.dtype()));
}
Tensor ftest_offset_cpu(const Tensor& x, double offset) { return add(x, full(x.sizes(), offset, x.dtype())); }
Tensor ftest_fail_cpu(const Tensor&, double factor) { throw Error("ftest::fail refused factor " + std::to_string(factor)); }

// How a mode hands the call on: its own arguments (a pass-through), twice, a changed copy of
// them, or the same arguments to another op.
struct ForwardingMode : DispatchMode {
  enum class How { Same, Twice, ChangedCopy, OtherOp } how;
  explicit ForwardingMode(How h) : how(h) {}
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    switch (how) {
      case How::Same: return op.call(args);
      case How::Twice: op.call(args); return op.call(args);
      case How::ChangedCopy: {
        std::vector<IValue> changed = args;
        changed[1] = IValue(3.0);
        return op.call(changed);
      }
      case How::OtherOp: return find_op("ftest::offset").call(args);
    }
    return {};
  }
};
}  // namespace

REMAT_LIBRARY_FRAGMENT(ftest, m) {
  m.def("scale(Tensor self, float factor) -> Tensor");
  m.def("offset(Tensor self, float offset) -> Tensor");
  m.def("fail(Tensor self, float factor) -> Tensor");
}
REMAT_LIBRARY_IMPL(ftest, CPU, m) {
  m.impl("scale", REMAT_FN(ftest_scale_cpu));
  m.impl("offset", REMAT_FN(ftest_offset_cpu));
  m.impl("fail", REMAT_FN(ftest_fail_cpu));
}

TEST_CASE("A typed call under a mode: op.call runs exactly the arguments the mode passes", "[dispatch_mode]") {
  // A pass-through's op.call(args) reruns the typed call instead of unboxing args again; a copy,
  // changed or not, or another op, must still run what it says.
  auto scale = find_op("ftest::scale").typed<Tensor(const Tensor&, double)>();
  Tensor x = full({2}, 5.0, kDouble);
  using How = ForwardingMode::How;
  struct Case {
    How how;
    std::vector<double> expected;
    int kernel_calls;
  };
  for (const Case& c : {Case{How::Same, {10, 10}, 1}, Case{How::Twice, {10, 10}, 2},
                        Case{How::ChangedCopy, {15, 15}, 1}, Case{How::OtherOp, {7, 7}, 0}}) {
    INFO("case " << static_cast<int>(c.how));
    g_scale_calls = 0;
    Tensor y;
    {
      DispatchModeGuard g(std::make_shared<ForwardingMode>(c.how));
      y = scale.call(x, 2.0);
    }
    REQUIRE(values(y) == c.expected);
    REQUIRE(g_scale_calls == c.kernel_calls);
    REQUIRE(x.use_count() == 1);  // the boxed (borrowed) arguments left no reference behind
  }
}

TEST_CASE("A pass-through under an outer mode: both see the typed call, each once", "[dispatch_mode]") {
  std::vector<std::string> log;
  auto outer = std::make_shared<TaggedMode>("outer", &log);
  auto inner = std::make_shared<TaggedMode>("inner", &log);
  Tensor x = full({2}, 5.0, kDouble);
  g_scale_calls = 0;
  Tensor y;
  {
    DispatchModeGuard go(outer);
    DispatchModeGuard gi(inner);
    y = find_op("ftest::scale").typed<Tensor(const Tensor&, double)>().call(x, 2.0);
  }
  REQUIRE(log == std::vector<std::string>{"inner:ftest::scale", "outer:ftest::scale"});
  REQUIRE(g_scale_calls == 1);
  REQUIRE(values(y) == std::vector<double>{10, 10});
}

TEST_CASE("A forwarded call that throws leaves no call in flight", "[dispatch_mode]") {
  auto fail = find_op("ftest::fail").typed<Tensor(const Tensor&, double)>();
  Tensor x = full({2}, 5.0, kDouble);
  auto mode = std::make_shared<ForwardingMode>(ForwardingMode::How::Same);
  {
    DispatchModeGuard g(mode);
    REQUIRE_THROWS_WITH(fail.call(x, 2.0), "ftest::fail refused factor 2.000000");
    // A boxed call now takes the ordinary path and runs its own arguments.
    std::vector<IValue> rets = find_op("ftest::offset").call({x, 1.0});
    REQUIRE(values(rets[0].toTensor()) == std::vector<double>{6, 6});
  }
  REQUIRE(DispatchModeTLS::size() == 0);
  REQUIRE(x.use_count() == 1);
}

namespace {
// DispatchMode::passes_through: logs every op it is asked about and lets it through, except the
// ops named in `to_dispatch`, which go on to dispatch() (which logs them and runs them).
struct HookMode : DispatchMode {
  HookMode(std::string tag, std::vector<std::string>* log, std::vector<std::string> to_dispatch = {})
      : tag_(std::move(tag)), log_(log), to_dispatch_(std::move(to_dispatch)) {}
  bool passes_through(const OperatorHandle& op, const IValue* args, size_t n) override {
    log_->push_back(tag_ + "?" + op.name());
    stack_size_inside = DispatchModeTLS::size();
    nargs_seen = n;
    first_arg = n > 0 ? args[0].str() : "";
    for (const std::string& name : to_dispatch_)
      if (op.name() == name) return false;
    return true;
  }
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    log_->push_back(tag_ + ":" + op.name());
    return op.call(args);
  }
  std::string tag_;
  std::vector<std::string>* log_;
  std::vector<std::string> to_dispatch_;
  size_t stack_size_inside = 99, nargs_seen = 99;
  std::string first_arg;
};
}  // namespace

TEST_CASE("passes_through sees every op first; what it lets through skips dispatch()", "[dispatch_mode]") {
  std::vector<std::string> log;
  auto mode = std::make_shared<HookMode>("m", &log, std::vector<std::string>{"aten::sin"});
  Tensor x = from_vector({0.5, 1.0}, {2}, f64(true));
  Tensor e, s;
  std::vector<IValue> boxed;
  {
    DispatchModeGuard g(mode);
    e = x.exp();                                 // a typed call, let through
    REQUIRE(mode->stack_size_inside == 0);       // the mode is stashed while it decides
    REQUIRE(mode->nargs_seen == 1);
    REQUIRE(mode->first_arg == IValue(x).str());
    Tensor plain = full({2}, 2.0, kDouble);
    REQUIRE(values(plain.exp())[0] == std::exp(2.0));
    REQUIRE(plain.use_count() == 1);             // the borrowed arguments left no reference behind
    s = x.sin();                                 // asked, then sent to dispatch()
    boxed = find_op("aten::exp").call({x});      // a boxed call, let through
    REQUIRE(DispatchModeTLS::size() == 1);
  }
  REQUIRE(log == std::vector<std::string>{"m?aten::exp", "m?aten::full", "m?aten::exp", "m?aten::sin",
                                          "m:aten::sin", "m?aten::exp"});
  REQUIRE(values(e) == std::vector<double>{std::exp(0.5), std::exp(1.0)});
  REQUIRE(values(s) == std::vector<double>{std::sin(0.5), std::sin(1.0)});
  REQUIRE(boxed.size() == 1);
  REQUIRE(values(boxed[0].toTensor()) == values(e));
  REQUIRE(e.grad_fn()->name() == "ExpBackward0");  // autograd still records the node above the mode
  e.sum().backward();
  REQUIRE(values(x.grad()) == values(e));
}

TEST_CASE("passes_through sees the same ops as a counting mode, and changes no value", "[dispatch_mode]") {
  // Forward and backward of a graph with one-, two- and three-output ops (layer_norm's
  // native_layer_norm) and a list op (cat): the ops a mode is asked about are exactly the ops a
  // dispatch()-only mode sees, in the same order, and the gradients are bitwise the same.
  auto run = [](const std::shared_ptr<DispatchMode>& mode, std::vector<double>* grads) {
    Tensor x = from_vector({0.5, -1.0, 2.0, 0.25, 1.5, -0.75}, {2, 3}, f64(true));
    Tensor w = from_vector({1.0, 2.0, -1.0}, {3}, f64(true));
    DispatchModeGuard g(mode);
    Tensor y = layer_norm(x, {3}, w, {}, 1e-5);
    Tensor z = cat({y, x.sin()}, 1).tanh().sum();
    z.backward();
    *grads = values(x.grad());
    for (double v : values(w.grad())) grads->push_back(v);
  };
  auto counting = std::make_shared<CountingMode>();
  std::vector<double> counted_grads;
  run(counting, &counted_grads);
  std::vector<std::string> log;
  auto hook = std::make_shared<HookMode>("", &log);
  std::vector<double> hook_grads;
  run(hook, &hook_grads);
  std::vector<std::string> asked;
  for (const std::string& l : log) asked.push_back(l.substr(1));  // drop the "?"
  REQUIRE(asked == counting->calls);
  REQUIRE(std::count(asked.begin(), asked.end(), "aten::native_layer_norm") == 1);
  REQUIRE(hook_grads == counted_grads);
  std::vector<double> plain_grads;
  {
    Tensor x = from_vector({0.5, -1.0, 2.0, 0.25, 1.5, -0.75}, {2, 3}, f64(true));
    Tensor w = from_vector({1.0, 2.0, -1.0}, {3}, f64(true));
    cat({layer_norm(x, {3}, w, {}, 1e-5), x.sin()}, 1).tanh().sum().backward();
    plain_grads = values(x.grad());
    for (double v : values(w.grad())) plain_grads.push_back(v);
  }
  REQUIRE(hook_grads == plain_grads);
}

TEST_CASE("passes_through under and over another mode: each sees the call once", "[dispatch_mode]") {
  auto scale = find_op("ftest::scale").typed<Tensor(const Tensor&, double)>();
  Tensor x = full({2}, 5.0, kDouble);
  for (bool hook_inner : {true, false}) {
    INFO("hook mode inner: " << hook_inner);
    std::vector<std::string> log;
    auto hook = std::make_shared<HookMode>("hook", &log);
    auto tagged = std::make_shared<TaggedMode>("tagged", &log);
    g_scale_calls = 0;
    Tensor y;
    {
      DispatchModeGuard outer(hook_inner ? std::shared_ptr<DispatchMode>(tagged) : hook);
      DispatchModeGuard inner(hook_inner ? std::shared_ptr<DispatchMode>(hook) : tagged);
      y = scale.call(x, 2.0);
      REQUIRE(hook->stack_size_inside == (hook_inner ? 1u : 0u));
    }
    REQUIRE(log == (hook_inner ? std::vector<std::string>{"hook?ftest::scale", "tagged:ftest::scale"}
                               : std::vector<std::string>{"tagged:ftest::scale", "hook?ftest::scale"}));
    REQUIRE(g_scale_calls == 1);
    REQUIRE(values(y) == std::vector<double>{10, 10});
    REQUIRE(x.use_count() == 1);
  }
}

TEST_CASE("passes_through: a call or a hook that throws leaves the stack as it was", "[dispatch_mode]") {
  auto fail = find_op("ftest::fail").typed<Tensor(const Tensor&, double)>();
  Tensor x = full({2}, 5.0, kDouble);
  std::vector<std::string> log;
  auto mode = std::make_shared<HookMode>("m", &log);
  {
    DispatchModeGuard g(mode);
    REQUIRE_THROWS_WITH(fail.call(x, 2.0), "ftest::fail refused factor 2.000000");
    REQUIRE(DispatchModeTLS::size() == 1);
    REQUIRE(DispatchModeTLS::stack()[0] == mode);
    REQUIRE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
    std::vector<IValue> rets = find_op("ftest::offset").call({x, 1.0});  // runs its own arguments
    REQUIRE(values(rets[0].toTensor()) == std::vector<double>{6, 6});
  }
  // (The kernels' own ops run while the mode is stashed: it is not asked about them.)
  REQUIRE(log == std::vector<std::string>{"m?ftest::fail", "m?ftest::offset"});
  struct ThrowingHook : HookMode {
    using HookMode::HookMode;
    bool passes_through(const OperatorHandle& op, const IValue*, size_t) override {
      throw Error("hook refused " + op.name());
    }
  };
  auto throwing = std::make_shared<ThrowingHook>("t", &log);
  {
    DispatchModeGuard g(throwing);
    REQUIRE_THROWS_WITH(x.cos(), "hook refused aten::cos");
    REQUIRE(DispatchModeTLS::size() == 1);
    REQUIRE(DispatchModeTLS::stack()[0] == throwing);
  }
  REQUIRE(DispatchModeTLS::size() == 0);
  REQUIRE_FALSE(tls_local_dispatch_key_set().included.has(DispatchKey::Python));
  REQUIRE(x.use_count() == 1);
}

TEST_CASE("passes_through sees only the op's arguments when the stack holds more below them", "[dispatch_mode]") {
  std::vector<std::string> log;
  auto mode = std::make_shared<HookMode>("m", &log);
  Tensor x = full({2}, 3.0, kDouble);
  const int before = g_sentinel_calls;
  std::vector<IValue> rets;
  {
    IncludeDispatchKeyGuard autocast(DispatchKey::Autocast);
    DispatchModeGuard g(mode);
    rets = find_op("mtest::neg").call({x});
  }
  REQUIRE(g_sentinel_calls == before + 1);
  REQUIRE(log.front() == "m?mtest::neg");
  REQUIRE(rets.size() == 1);
  REQUIRE(values(rets[0].toTensor()) == std::vector<double>{-3.0, -3.0});
}
