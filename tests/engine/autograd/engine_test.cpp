// Mirrors test/test_autograd.py (engine order, reentrant backward, partial graphs).
// Tests engine/autograd/engine.cpp (Engine::execute: dependencies, input buffers, graph
// tasks, partial runs, reentrant backward, validate_outputs).
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::autograd::AutogradContext;
using remat::autograd::Engine;
using remat::autograd::Function;
using remat::testing::f64;
using remat::testing::values;

namespace {

// Records the engine state seen from inside backward.
int64_t g_task_id = -2;
int g_depth = -1;
bool g_checkpoint_valid = false;
struct Probe : Function<Probe> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 1.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) {
    g_task_id = Engine::current_graph_task_id();
    g_depth = Engine::reentrant_depth();
    g_checkpoint_valid = Engine::is_checkpoint_valid();
    return grads;
  }
};

// A backward that runs a backward of its own (as reentrant checkpoint does).
int g_inner_depth = -1;
int64_t g_outer_id = -1, g_inner_id = -1;
struct Reentrant : Function<Reentrant> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * 1.0;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    // forward: y = x, backward recomputes z = x^2 and returns grad * dz/dx = grad * 2x
    g_outer_id = Engine::current_graph_task_id();
    Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    Tensor z;
    {
      autograd::EnableGradGuard g;
      z = (x * x).sum();
    }
    struct Inner : Function<Inner> {
      static Tensor forward(AutogradContext*, Tensor t) { return t * 1.0; }
      static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> gs) {
        g_inner_depth = Engine::reentrant_depth();
        g_inner_id = Engine::current_graph_task_id();
        return gs;
      }
    };
    {
      autograd::EnableGradGuard g;
      z = Inner::apply(z);
    }
    autograd::backward({z});
    return {grads[0] * x.grad()};
  }
};

}  // namespace

TEST_CASE("Gradients flowing into one node input are summed before it runs", "[engine]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor h = x * 2.0;
  Tensor loss = (h + h * 3.0 + h.exp()).sum();  // h feeds three nodes
  int runs = 0;
  h.grad_fn()->add_pre_hook([&](const autograd::variable_list& g) {
    ++runs;
    return g;
  });
  loss.backward();
  REQUIRE(runs == 1);
  REQUIRE(values(x.grad())[0] == Approx(2 * (1 + 3 + std::exp(2.0))).epsilon(1e-14));
  REQUIRE(values(x.grad())[1] == Approx(2 * (1 + 3 + std::exp(4.0))).epsilon(1e-14));
}

TEST_CASE("Graph task ids and state seen from inside backward", "[engine]") {
  REQUIRE(Engine::current_graph_task_id() == -1);
  REQUIRE(Engine::reentrant_depth() == 0);
  REQUIRE(Engine::is_checkpoint_valid());
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Probe::apply(x).sum().backward();
  REQUIRE(g_task_id >= 0);
  REQUIRE(g_depth == 1);
  REQUIRE(g_checkpoint_valid);  // a plain backward runs the whole graph
  int64_t first = g_task_id;
  autograd::grad({Probe::apply(x).sum()}, {x});
  REQUIRE(g_task_id > first);  // every task has its own id
  REQUIRE_FALSE(g_checkpoint_valid);  // grad() runs part of the graph
  autograd::backward({Probe::apply(x).sum()}, {}, false, false, {x});
  REQUIRE_FALSE(g_checkpoint_valid);  // so does backward(inputs=)
  REQUIRE(Engine::current_graph_task_id() == -1);
  int64_t a = Engine::new_graph_task_id(), b = Engine::new_graph_task_id();
  REQUIRE(b > a);
}

TEST_CASE("A backward can run a backward of its own (reentrant)", "[engine]") {
  Tensor x = from_vector({1, 3}, {2}, f64(true));
  Reentrant::apply(x).sum().backward();
  REQUIRE(g_inner_depth == 2);
  REQUIRE(g_inner_id != g_outer_id);
  REQUIRE(values(x.grad()) == std::vector<double>{2, 6});
  REQUIRE(Engine::reentrant_depth() == 0);
}

TEST_CASE("grad() runs only the nodes on a path to the requested inputs", "[engine]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor y = from_vector({3, 4}, {2}, f64(true));
  Tensor a = x.sin();
  Tensor b = y.cos();
  bool b_ran = false;
  b.grad_fn()->add_pre_hook([&](const autograd::variable_list& g) {
    b_ran = true;
    return g;
  });
  autograd::grad({(a + b).sum()}, {x});
  REQUIRE_FALSE(b_ran);
}

TEST_CASE("The engine sums a broadcast gradient back and casts its dtype", "[engine]") {
  struct Broadcasting : Function<Broadcasting> {
    static Tensor forward(AutogradContext*, Tensor x) { return x * 1.0; }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) {
      // returns a [3, 2] float gradient for a [2] double input
      return {grads[0].unsqueeze(0).expand({3, 2}).to(kFloat)};
    }
  };
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Broadcasting::apply(x).sum().backward();
  REQUIRE(x.grad().dtype() == kDouble);
  REQUIRE(values(x.grad()) == std::vector<double>{3, 3});
}

TEST_CASE("An exception in backward leaves the engine usable", "[engine]") {
  struct Fails : Function<Fails> {
    static Tensor forward(AutogradContext*, Tensor x) { return x * 1.0; }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor>) { throw Error("backward failed"); }
  };
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  REQUIRE_THROWS_WITH(Fails::apply(x).sum().backward(), "backward failed");
  REQUIRE(Engine::current_graph_task_id() == -1);
  REQUIRE(Engine::reentrant_depth() == 0);
  REQUIRE(autograd::is_grad_enabled());
  (x * 2.0).sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{2, 2});
}

TEST_CASE("Backward runs formulas without recording, unless create_graph", "[engine]") {
  bool grad_mode_in_backward = true;
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor y = x * x;
  y.grad_fn()->add_pre_hook([&](const autograd::variable_list& g) {
    grad_mode_in_backward = autograd::is_grad_enabled();
    return g;
  });
  y.sum().backward();
  REQUIRE_FALSE(grad_mode_in_backward);
  REQUIRE_FALSE(x.grad().requires_grad());
}

TEST_CASE("A tensor hook runs once when its gradient is both captured and passed on", "[engine]") {
  // grad() / backward(inputs=) with a non-leaf h and a leaf x behind it: h's gradient is
  // captured (after its hooks) and also flows on to x.
  int runs = 0;
  auto times_ten = [&runs](const Tensor& g) {
    ++runs;
    return g * 10.0;
  };
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor h = x * 2.0;
  h.register_hook(times_ten);
  std::vector<Tensor> g = autograd::grad({(h * h).sum()}, {h, x});
  REQUIRE(runs == 1);
  REQUIRE(values(g[0]) == std::vector<double>{40, 80});   // 10 * 2h
  REQUIRE(values(g[1]) == std::vector<double>{80, 160});  // 10 * 2h * 2

  runs = 0;
  Tensor x2 = from_vector({1, 2}, {2}, f64(true));
  Tensor h2 = x2 * 2.0;
  h2.register_hook(times_ten);
  autograd::backward({(h2 * h2).sum()}, {}, false, false, {h2, x2});
  REQUIRE(runs == 1);
  REQUIRE(values(h2.grad()) == std::vector<double>{40, 80});
  REQUIRE(values(x2.grad()) == std::vector<double>{80, 160});

  // retain_grad is such a hook: it must not count the gradient twice.
  Tensor x3 = from_vector({1, 2}, {2}, f64(true));
  Tensor h3 = x3 * 2.0;
  h3.retain_grad();
  autograd::grad({(h3 * h3).sum()}, {h3, x3});
  REQUIRE(values(h3.grad()) == std::vector<double>{4, 8});
}
