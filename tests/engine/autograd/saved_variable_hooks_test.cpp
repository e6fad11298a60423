// Mirrors test/test_autograd.py (saved tensors hooks: test_default_saved_variable_hooks_*).
// Tests engine/autograd/saved_variable_hooks.cpp (saved_tensors_hooks,
// disable_saved_tensors_hooks) and how SavedVariable uses them (test_autograd.py's
// saved-tensor hooks tests).
#include <catch2/catch.hpp>

#include <any>
#include <cmath>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::autograd::saved_tensors_hooks;
using remat::autograd::disable_saved_tensors_hooks;
using remat::autograd::SavedTensorDefaultHooks;
using remat::testing::f64;
using remat::testing::values;

namespace {
// A pair that stores the tensor itself and counts calls.
struct Counter {
  int packs = 0, unpacks = 0;
  std::vector<Tensor> packed;
  autograd::PackHook pack() {
    return [this](const Tensor& t) -> std::any {
      ++packs;
      packed.push_back(t);
      return t;
    };
  }
  autograd::UnpackHook unpack() {
    return [this](const std::any& a) {
      ++unpacks;
      return std::any_cast<Tensor>(a);
    };
  }
};
}  // namespace

TEST_CASE("a * a packs twice and unpacks twice", "[saved_tensors_hooks]") {
  Counter c;
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor y;
  {
    saved_tensors_hooks hooks(c.pack(), c.unpack());
    y = a * a;
  }
  REQUIRE(c.packs == 2);
  REQUIRE(c.unpacks == 0);
  y.sum().backward();
  REQUIRE(c.unpacks == 2);
  REQUIRE(values(a.grad()) == std::vector<double>{2, 4});
}

TEST_CASE("exp saves its output: one pack, of the output tensor itself", "[saved_tensors_hooks]") {
  Counter c;
  Tensor a = from_vector({0.5, 1.5}, {2}, f64(true));
  Tensor y;
  {
    saved_tensors_hooks hooks(c.pack(), c.unpack());
    y = a.exp();
  }
  REQUIRE(c.packs == 1);
  REQUIRE(c.packed[0].unsafeGetTensorImpl() == y.unsafeGetTensorImpl());
  y.sum().backward();
  REQUIRE(c.unpacks == 1);
  REQUIRE(values(a.grad())[1] == Approx(std::exp(1.5)).epsilon(1e-14));
}

TEST_CASE("pack receives the input tensor itself (the same TensorImpl)", "[saved_tensors_hooks]") {
  Counter c;
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor h = a * 3.0;
  Tensor b = from_vector({5, 6}, {2}, f64(true));  // requires grad: mul saves h for b's gradient
  {
    saved_tensors_hooks hooks(c.pack(), c.unpack());
    Tensor y = h * b;
  }
  REQUIRE(c.packs == 2);
  REQUIRE(c.packed[0].unsafeGetTensorImpl() == h.unsafeGetTensorImpl());
  REQUIRE(c.packed[1].unsafeGetTensorImpl() == b.unsafeGetTensorImpl());
}

TEST_CASE("The innermost pair wins", "[saved_tensors_hooks]") {
  Counter outer, inner;
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor y;
  {
    saved_tensors_hooks o(outer.pack(), outer.unpack());
    {
      saved_tensors_hooks i(inner.pack(), inner.unpack());
      y = a.sin();
    }
    Tensor z = a.cos();  // the outer pair again
  }
  REQUIRE(inner.packs == 1);
  REQUIRE(outer.packs == 1);
  y.sum().backward();
  REQUIRE(inner.unpacks == 1);
  REQUIRE(outer.unpacks == 0);
}

TEST_CASE("pack runs under no-grad", "[saved_tensors_hooks]") {
  bool grad_enabled_in_pack = true;
  bool result_requires_grad = true;
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  {
    saved_tensors_hooks hooks(
        [&](const Tensor& t) -> std::any {
          grad_enabled_in_pack = autograd::is_grad_enabled();
          Tensor twice = t * 2.0;  // records nothing
          result_requires_grad = twice.requires_grad();
          return t;
        },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    Tensor y = a.sin();
    REQUIRE(autograd::is_grad_enabled());  // restored after the pack
  }
  REQUIRE_FALSE(grad_enabled_in_pack);
  REQUIRE_FALSE(result_requires_grad);
}

TEST_CASE("unpack must return a defined tensor", "[saved_tensors_hooks]") {
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor y;
  {
    saved_tensors_hooks hooks([](const Tensor&) -> std::any { return 0; },
                              [](const std::any&) { return Tensor(); });
    y = a.sin();
  }
  REQUIRE_THROWS_WITH(y.sum().backward(),
                      "Output of saved tensor unpack_hook expected to be a Tensor but got an undefined Tensor");
}

TEST_CASE("A pack hook that modifies its input in place is an error", "[saved_tensors_hooks]") {
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor h = a * 1.0;
  saved_tensors_hooks hooks(
      [](const Tensor& t) -> std::any {
        Tensor alias = t;
        alias.mul_(2.0);
        return t;
      },
      [](const std::any& p) { return std::any_cast<Tensor>(p); });
  REQUIRE_THROWS_WITH(h.sin(), Catch::StartsWith("A saved tensor pack hook is modifying its input in place."));
}

TEST_CASE("What unpack returns is used: the gradient sees the replacement", "[saved_tensors_hooks]") {
  // pack stores 2 * x; unpack returns it: sin's backward computes cos(2x).
  Tensor x = from_vector({0.1, 0.7}, {2}, f64(true));
  Tensor y;
  {
    saved_tensors_hooks hooks([](const Tensor& t) -> std::any { return t * 2.0; },
                              [](const std::any& p) { return std::any_cast<Tensor>(p); });
    y = x.sin();
  }
  y.sum().backward();
  REQUIRE(values(x.grad())[0] == Approx(std::cos(0.2)).epsilon(1e-14));
  REQUIRE(values(x.grad())[1] == Approx(std::cos(1.4)).epsilon(1e-14));
}

TEST_CASE("With hooks the version check is skipped", "[saved_tensors_hooks]") {
  Tensor x = from_vector({0.1, 0.7}, {2}, f64(true));
  Tensor h = x * 2.0;
  Tensor y;
  {
    saved_tensors_hooks hooks([](const Tensor& t) -> std::any { return t; },
                              [](const std::any& p) { return std::any_cast<Tensor>(p); });
    y = h.sin();
  }
  h.add_(1.0);  // without hooks this would fail backward
  y.sum().backward();
  // The hook handed back the modified h: d/dx = cos(2x + 1) * 2.
  REQUIRE(values(x.grad())[0] == Approx(2 * std::cos(1.2)).epsilon(1e-14));
  REQUIRE(values(x.grad())[1] == Approx(2 * std::cos(2.4)).epsilon(1e-14));
}

TEST_CASE("Hooks are bound at save time: popping the pair before backward still uses it", "[saved_tensors_hooks]") {
  Counter c;
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor y;
  {
    saved_tensors_hooks hooks(c.pack(), c.unpack());
    y = a.sin();
  }
  REQUIRE_FALSE(SavedTensorDefaultHooks::is_enabled());
  y.sum().backward();
  REQUIRE(c.unpacks == 1);
}

TEST_CASE("Hooks active during a create_graph backward apply to what the backward graph saves",
          "[saved_tensors_hooks]") {
  // test_autograd.py test_default_saved_variable_hooks_double_backward, with remat's pow rule
  // (grad * pow(x, e - 1) * e): pack doubles, unpack is the identity.
  auto pack = [](const Tensor& t) -> std::any { return t * 2.0; };
  auto unpack = [](const std::any& p) { return std::any_cast<Tensor>(p); };
  const std::vector<double> a_values = {0.5, -1.5, 2.0};
  auto check = [&](const Tensor& a, double factor) {
    for (size_t i = 0; i < 3; ++i) REQUIRE(values(a.grad())[i] == Approx(6 * factor * a_values[i]).epsilon(1e-14));
  };
  {  // identity-like hooks everywhere: 6a
    saved_tensors_hooks hooks([](const Tensor& t) -> std::any { return t; }, unpack);
    Tensor a = from_vector(a_values, {3}, f64(true));
    Tensor g = autograd::grad({a.pow(3.0).sum()}, {a}, {}, false, true)[0];
    g.sum().backward();
    check(a, 1);
  }
  {  // hooks in forward only: a is saved once, as 2a: 12a
    Tensor a = from_vector(a_values, {3}, f64(true));
    Tensor s;
    {
      saved_tensors_hooks hooks(pack, unpack);
      s = a.pow(3.0).sum();
    }
    Tensor g = autograd::grad({s}, {a}, {}, false, true)[0];
    g.sum().backward();
    check(a, 2);
  }
  {  // hooks in the create_graph backward only: its mul saves grad (2x) and pow(a, 2) saves a (2x): 24a
    Tensor a = from_vector(a_values, {3}, f64(true));
    Tensor s = a.pow(3.0).sum();
    saved_tensors_hooks hooks(pack, unpack);
    Tensor g = autograd::grad({s}, {a}, {}, false, true)[0];
    g.sum().backward();
    check(a, 4);
  }
  {  // both: 48a
    saved_tensors_hooks hooks(pack, unpack);
    Tensor a = from_vector(a_values, {3}, f64(true));
    Tensor g = autograd::grad({a.pow(3.0).sum()}, {a}, {}, false, true)[0];
    g.sum().backward();
    check(a, 8);
  }
}

TEST_CASE("disable_saved_tensors_hooks makes a push throw its message, and restores the state",
          "[saved_tensors_hooks]") {
  auto pack = [](const Tensor& t) -> std::any { return t; };
  auto unpack = [](const std::any& p) { return std::any_cast<Tensor>(p); };
  REQUIRE_FALSE(SavedTensorDefaultHooks::disabled_error_message().has_value());
  {
    disable_saved_tensors_hooks off("hooks are not allowed here (outer)");
    REQUIRE_THROWS_WITH(saved_tensors_hooks(pack, unpack), "hooks are not allowed here (outer)");
    {
      disable_saved_tensors_hooks inner("inner message");
      REQUIRE_THROWS_WITH(saved_tensors_hooks(pack, unpack), "inner message");
    }
    REQUIRE_THROWS_WITH(saved_tensors_hooks(pack, unpack), "hooks are not allowed here (outer)");
    REQUIRE_FALSE(SavedTensorDefaultHooks::is_enabled());  // the failed push left nothing behind
  }
  REQUIRE_FALSE(SavedTensorDefaultHooks::disabled_error_message().has_value());
  saved_tensors_hooks ok(pack, unpack);
  REQUIRE(SavedTensorDefaultHooks::is_enabled());
}

TEST_CASE("Disabling does not remove pairs already pushed", "[saved_tensors_hooks]") {
  Counter c;
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  saved_tensors_hooks hooks(c.pack(), c.unpack());
  disable_saved_tensors_hooks off("no new hooks");
  Tensor y = a.sin();
  REQUIRE(c.packs == 1);
}

TEST_CASE("The hooks stack: push/pop errors, get_stack/set_stack", "[saved_tensors_hooks]") {
  REQUIRE_THROWS_WITH(SavedTensorDefaultHooks::push(nullptr, [](const std::any&) { return Tensor(); }),
                      "saved_tensors_hooks: both a pack and an unpack hook are required");
  REQUIRE_THROWS_WITH(SavedTensorDefaultHooks::pop(), "saved_tensors_hooks: pop with an empty hooks stack");
  Counter c;
  saved_tensors_hooks hooks(c.pack(), c.unpack());
  auto stack = SavedTensorDefaultHooks::get_stack();
  REQUIRE(stack.size() == 1);
  REQUIRE(SavedTensorDefaultHooks::top() == stack[0]);
  SavedTensorDefaultHooks::set_stack({});
  REQUIRE(SavedTensorDefaultHooks::top() == nullptr);
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor y = a.sin();  // no hooks while the stack is set aside
  REQUIRE(c.packs == 0);
  SavedTensorDefaultHooks::set_stack(stack);
  Tensor z = a.sin();
  REQUIRE(c.packs == 1);
}

TEST_CASE("Unpacked tensors connect to the original graph, not to the unpacked tensor's history",
          "[saved_tensors_hooks]") {
  // unpack returns a tensor with its own history (as a recomputation would): the gradient must
  // still flow to h's grad_fn, and the extra history must not be followed.
  Tensor x = from_vector({0.3, 0.9}, {2}, f64(true));
  Tensor other = from_vector({1, 1}, {2}, f64(true));
  Tensor h = x * 2.0;
  Tensor y;
  {
    saved_tensors_hooks hooks([](const Tensor& t) -> std::any { return t.detach(); },
                              [&](const std::any& p) {
                                autograd::EnableGradGuard g;
                                return std::any_cast<Tensor>(p) * other;  // other = 1: same values
                              });
    y = h * h;
  }
  y.sum().backward();
  REQUIRE(values(x.grad()) == values(h.detach() * 4.0));  // d/dx (2x)^2 = 8x = 4h
  REQUIRE_FALSE(other.grad().defined());
}

TEST_CASE("Custom Functions save through the hooks too", "[saved_tensors_hooks]") {
  struct Square : autograd::Function<Square> {
    static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
      ctx->save_for_backward({x});
      return x * x;
    }
    static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
      // forward: y = x * x
      return {grads[0] * ctx->get_saved_variables()[0] * 2.0};
    }
  };
  Counter c;
  Tensor x = from_vector({1, 3}, {2}, f64(true));
  Tensor y;
  {
    saved_tensors_hooks hooks(c.pack(), c.unpack());
    y = Square::apply(x);
  }
  REQUIRE(c.packs == 1);
  y.sum().backward();
  REQUIRE(c.unpacks == 1);
  REQUIRE(values(x.grad()) == std::vector<double>{2, 6});
}
