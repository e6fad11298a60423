// Tests engine/autograd/functions/tensor.cpp (CopySlices) together with the view machinery it
// relies on (engine/autograd/variable.cpp: as_view, rebase_history, the regenerated grad_fn of a
// view, handle_view_on_rebase). Mirrors PyTorch's test/test_autograd.py; the cases ported here:
//
//   TestAutograd:           test_inplace_on_view_saved_output, test_inplace_on_view_leaf_errors,
//                           test_inplace_on_view_backward, test_inplace_on_view_weak_grad_fn,
//                           test_leaf_assignment, test_autograd_views_codegen,
//                           test_inplace_not_requires_grad, test_version_counter (views part)
//   TestAutogradDeviceType: test_inplace_on_view_backprop_base,
//                           test_inplace_on_view_backprop_view_of_view, test_inplace_on_view_of_view,
//                           test_inplace_on_view_then_no_grad, test_inplace_on_view_gradcheck,
//                           test_inplace_on_view_multiple_outputs,
//                           test_inplace_on_view_of_multiple_output_view,
//                           test_inplace_multiple_output_view_of_view,
//                           test_inplace_on_view_makes_base_require_grad,
//                           test_inplace_on_view_backprop_view, test_inplace_on_view_modify_base,
//                           test_inplace_on_view_python, test_inplace_on_view_non_contig,
//                           test_inplace_on_view_multi_output_safe,
//                           test_inplace_on_view_undefined_grad_output
//
// Adapted: test_inplace_on_view_backward uses layer_norm + relu_ on a view of its output (remat
// has no InstanceNorm2d) and relu_ for threshold_, and looks for ThresholdBackwardBackward0
// anywhere in the double-backward graph (remat's graph differs in shape from PyTorch's);
// test_inplace_on_view_saved_output counts live nodes instead of a Python finalizer. Where
// PyTorch only checks that no error is raised, the gradients are checked too.
//
// Not ported:
//   test_inplace_on_view_multi_output_unsafe: remat has no unsafe_split / unsafe_chunk, and could
//     not mirror them: their outputs get version counters of their own in PyTorch, while remat
//     keeps one counter per storage, so s1.mul_(s2) would fail s2's version check.
//   test_view_replay_enabled: remat always regenerates a view's grad_fn as AsStridedBackward0
//     (PyTorch's default); it has no view-replay switch.
//   test_autograd_simple_views_python, test_autograd_inplace_views_creation_meta: cover pure-view
//     custom Functions and in-place view ops (transpose_, detach_), which remat does not have.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <set>

#include "engine/autograd/functions/tensor.h"
#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::f64;
using remat::testing::values;

namespace {

// Every node name reachable from fn.
std::set<std::string> reachable_names(const std::shared_ptr<autograd::Node>& fn) {
  std::set<std::string> names;
  std::set<autograd::Node*> seen;
  std::function<void(const std::shared_ptr<autograd::Node>&)> visit = [&](const std::shared_ptr<autograd::Node>& n) {
    if (n == nullptr || !seen.insert(n.get()).second) return;
    names.insert(n->name());
    for (const autograd::Edge& e : n->next_edges()) visit(e.function);
  };
  visit(fn);
  return names;
}

}  // namespace

// ---- CopySlices itself -------------------------------------------------------------------------

TEST_CASE("CopySlices: the base's history after an in-place op on a view", "[copy_slices]") {
  Tensor root = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, f64(true));
  Tensor other = from_vector({10, 20}, {2}, f64(true));
  Tensor x = root * 1.0;
  auto old_fn = x.grad_fn();
  Tensor v = x.select(1, 1);  // [2, 5]
  v.mul_(other);
  auto cs = std::dynamic_pointer_cast<autograd::CopySlices>(x.grad_fn());
  REQUIRE(cs != nullptr);
  REQUIRE(x.grad_fn()->name() == "CopySlices");
  // Edge 0 goes to the base's old history; the others are the in-place op's (other's grad).
  REQUIRE(cs->num_outputs() == 2);
  REQUIRE(cs->next_edge(0).function == old_fn);
  REQUIRE(cs->next_edge(1).function == autograd::impl::try_get_grad_accumulator(other));
  REQUIRE(cs->fn()->name() == "MulBackward0");
  REQUIRE(cs->view_geometry().sizes == Shape{2});
  REQUIRE(cs->view_geometry().strides == Shape{3});
  REQUIRE(cs->view_geometry().storage_offset == 1);
  REQUIRE(cs->base_geometry().sizes == Shape{2, 3});
  // The view's own grad_fn is regenerated from the base.
  REQUIRE(v.grad_fn()->name() == "AsStridedBackward0");
  REQUIRE(v.grad_fn()->next_edge(0).function == x.grad_fn());

  (x * from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, kDouble)).sum().backward();
  // d/droot: the weights, times 10 / 20 on the modified column.
  REQUIRE(values(root.grad()) == std::vector<double>{1, 2 * 10, 3, 4, 5 * 20, 6});
  REQUIRE(values(other.grad()) == std::vector<double>{2 * 2, 5 * 5});
}

TEST_CASE("CopySlices: backward twice without retain_graph, and with it", "[copy_slices]") {
  Tensor root = from_vector({1, 2, 3}, {3}, f64(true));
  Tensor x = root * 2.0;
  x.narrow(0, 1, 2).mul_(3.0);
  Tensor loss = x.sum();
  loss.backward({}, /*retain_graph=*/true);
  REQUIRE(values(root.grad()) == std::vector<double>{2, 6, 6});
  loss.backward();
  REQUIRE(values(root.grad()) == std::vector<double>{4, 12, 12});
  REQUIRE_THROWS_WITH(loss.backward(), Catch::Contains("Trying to backward through the graph a second time"));
}

TEST_CASE("CopySlices: grad() with inputs= reaches the op's own gradient", "[copy_slices]") {
  // fn's edge 0 (the view's old history) is not on the graph the engine walks; CopySlices marks
  // it so that fn still computes the view's gradient.
  Tensor root = from_vector({1, 2, 3, 4}, {4}, f64(true));
  Tensor w = from_vector({5, 6}, {2}, f64(true));
  Tensor x = root * 1.0;
  x.narrow(0, 0, 2).mul_(w);
  std::vector<Tensor> g = autograd::grad({x.sum()}, {root, w}, {}, /*retain_graph=*/true);
  REQUIRE(values(g[0]) == std::vector<double>{5, 6, 1, 1});
  REQUIRE(values(g[1]) == std::vector<double>{1, 2});
  std::vector<Tensor> only_root = autograd::grad({x.sum()}, {root});
  REQUIRE(values(only_root[0]) == std::vector<double>{5, 6, 1, 1});
}

TEST_CASE("CopySlices: a tensor saved before its view was modified fails the version check", "[copy_slices]") {
  Tensor root = from_vector({1, 2, 3, 4}, {4}, f64(true));
  Tensor x = root * 1.0;
  Tensor y = x.sin();  // saves x
  x.narrow(0, 0, 2).mul_(2.0);
  REQUIRE_THROWS_WITH(y.sum().backward(),
                      Catch::StartsWith("one of the variables needed for gradient computation has been modified by an "
                                        "inplace operation: [CPUDoubleType [4]], which is output 0 of CopySlices, is at "
                                        "version 1; expected version 0 instead."));
  // And a saved view, modified through itself.
  Tensor x2 = root * 1.0;
  Tensor v = x2.narrow(0, 1, 2);
  Tensor z = v.sin();  // saves v
  v.mul_(2.0);
  REQUIRE_THROWS_WITH(z.sum().backward(),
                      Catch::StartsWith("one of the variables needed for gradient computation has been modified by an "
                                        "inplace operation: [CPUDoubleType [2]], which is output 0 of "
                                        "AsStridedBackward0, is at version 1; expected version 0 instead."));
}

TEST_CASE("CopySlices: create_graph records the slice's backward (second derivatives)", "[copy_slices]") {
  Tensor a = from_vector({0.5, -1.0, 2.0, 1.5}, {4}, f64(true));
  Tensor b = from_vector({0.3, -0.7}, {2}, f64(true));
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0].clone();
    x.narrow(0, 1, 2).mul_(in[1] * in[1]);
    return std::vector<Tensor>{x * x};
  };
  REQUIRE(autograd::gradcheck(fn, {a, b}));
  REQUIRE(autograd::gradgradcheck(fn, {a, b}));
}

TEST_CASE("CopySlices: dry run on the Meta device", "[copy_slices][meta]") {
  Tensor root = zeros({4, 4}, TensorOptions().device(Device{kMeta})).requires_grad_();
  Tensor w = zeros({2, 4}, TensorOptions().device(Device{kMeta})).requires_grad_();
  Tensor x = root * 2.0;
  x.narrow(0, 1, 2).mul_(w);
  x.sum().backward();
  REQUIRE(root.grad().sizes() == Shape{4, 4});
  REQUIRE(root.grad().is_meta());
  REQUIRE(w.grad().sizes() == Shape{2, 4});
}

// ---- Ported from PyTorch's test_autograd.py ---------------------------------------------------

TEST_CASE("test_inplace_on_view_saved_output", "[copy_slices][pytorch]") {
  // relu_ on a view saves its output; that must not form a reference cycle through CopySlices.
  const int64_t before = autograd::Node::live_count();
  {
    Tensor root = randn({3, 3}, kDouble).requires_grad_();
    Tensor copy = root.clone();
    Tensor view = copy.view({9});
    view.relu_();
    REQUIRE(copy.grad_fn()->name() == "CopySlices");
  }
  REQUIRE(autograd::Node::live_count() == before);
}

TEST_CASE("test_inplace_on_view_leaf_errors", "[copy_slices][pytorch]") {
  Tensor x = zeros({1}, f64(true));
  Tensor y = x.view_as(x);
  const int64_t version = x._version();
  REQUIRE_THROWS_WITH(y.add_(1.0), "a view of a leaf Variable that requires grad is being used in an in-place "
                                   "operation. (aten::add_.Scalar on a view of shape [1] of a leaf of shape [1])");
  REQUIRE(x._version() == version);  // nothing happened
}

TEST_CASE("test_inplace_on_view_backward", "[copy_slices][pytorch]") {
  // Issue #10532: a graph with relu_ on a view, differentiated twice.
  Tensor x = from_vector({1.0, 1.0, 2.0, 3.0}, {1, 1, 2, 2}, f64(true));
  auto net = [](const Tensor& in) {
    Tensor out = layer_norm(in, {2}).view_as(in);
    out.relu_();
    return out;
  };
  Tensor g = autograd::grad({net(x).pow(2.0)}, {x}, {ones_like(x)}, /*retain_graph=*/false, /*create_graph=*/true)[0];
  REQUIRE_NOTHROW(autograd::grad({g.sum()}, {x}));
  REQUIRE(values(x) == std::vector<double>{1.0, 1.0, 2.0, 3.0});

  // discuss.pytorch.org/t/freeing-buffer-strange-behavior/31955/8
  Tensor inputs = ones({1, 3, 4, 4}, f64(true));
  Tensor tmp1 = (inputs + 1.0).view_as(inputs);
  Tensor tmp2 = tmp1;
  tmp2.relu_();
  Tensor prob = tmp2.sigmoid();
  Tensor gradients =
      autograd::grad({prob}, {inputs}, {ones_like(prob)}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  Tensor gradient_penalty = gradients.sum();
  gradient_penalty.backward();
  REQUIRE(reachable_names(gradient_penalty.grad_fn()).count("ThresholdBackwardBackward0") == 1);
  // d/dx sum(sigmoid'(relu(x + 1))) = sigmoid''(2) at x = 1
  const double s = 1.0 / (1.0 + std::exp(-2.0));
  const double second = s * (1 - s) * (1 - 2 * s);
  for (double v : values(inputs.grad())) REQUIRE(v == Approx(second).epsilon(1e-12));
}

TEST_CASE("test_inplace_on_view_weak_grad_fn", "[copy_slices][pytorch]") {
  // Issue 23502: b's grad_fn is kept alive by the graph after b itself is gone.
  Tensor a = arange(10, kDouble).requires_grad_();
  Tensor b = a.narrow(0, 0, 2).clone().view({-1});
  b.relu_();
  Tensor c = b.clone();
  b.reset();
  Tensor s = c.sum();
  s.backward();
  REQUIRE(s.item() == 1.0);
  REQUIRE(values(a.grad()) == std::vector<double>{0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
  // Issue #21875: fail fast when the leaf itself is modified.
  REQUIRE_THROWS_WITH(a.relu_(), Catch::StartsWith("a leaf Variable that requires grad is being used in an in-place "
                                                   "operation."));
}

TEST_CASE("test_leaf_assignment", "[copy_slices][pytorch]") {
  // x[0] = y; x[1] = 2 * z on a leaf that does not require grad
  Tensor x = randn({5, 5}, kDouble);
  Tensor y = randn({5}, f64(true));
  Tensor z = randn({5}, f64(true));
  x.select(0, 0).copy_(y);
  x.select(0, 1).copy_(z * 2.0);
  REQUIRE(x.requires_grad());
  REQUIRE(x.grad_fn() != nullptr);
  REQUIRE(x.grad_fn()->name() == "CopySlices");
  x.sum().backward();
  REQUIRE(values(y.grad()) == std::vector<double>(5, 1.0));
  REQUIRE(values(z.grad()) == std::vector<double>(5, 2.0));
}

TEST_CASE("test_autograd_views_codegen: which views may be modified in place", "[copy_slices][pytorch]") {
  auto run = [](bool grad_mode, bool requires_grad) {
    Tensor inp = rand({2}, kDouble).requires_grad_(requires_grad).clone();
    Tensor view, first;
    std::vector<Tensor> parts;
    {
      autograd::AutoGradMode mode(grad_mode);
      view = inp.view_as(inp);
      parts = inp.unbind();
    }
    REQUIRE(view.is_view());
    REQUIRE(parts[0].is_view());
    REQUIRE(parts[1].is_view());
    REQUIRE(view._base().is_same(inp));
    REQUIRE(parts[1]._base().is_same(inp));
    std::vector<std::string> errors;  // one per in-place attempt; "" when it ran
    for (Tensor* t : {&view, &parts[0], &parts[1]}) {
      try {
        t->add_(1.0);
        errors.emplace_back();
      } catch (const Error& e) {
        errors.emplace_back(e.what());
      }
    }
    return errors;
  };
  // No grad needed anywhere: every view may be modified.
  for (const std::string& e : run(true, false)) REQUIRE(e.empty());
  for (const std::string& e : run(false, false)) REQUIRE(e.empty());
  // Grad needed, views made with grad on: view_as may, unbind's outputs may not.
  std::vector<std::string> e = run(true, true);
  REQUIRE(e[0].empty());
  REQUIRE_THAT(e[1], Catch::StartsWith("Output 0 of UnbindBackward0 is a view and is being modified inplace. This "
                                       "view is the output of a function that returns multiple views. Such functions "
                                       "do not allow the output views to be modified inplace. You should replace the "
                                       "inplace operation by an out-of-place one."));
  REQUIRE_THAT(e[2], Catch::StartsWith("Output 1 of UnbindBackward0 is a view and is being modified inplace."));
  // Grad needed, views made under no_grad: none may.
  for (const std::string& msg : run(false, true)) {
    REQUIRE_THAT(msg, Catch::StartsWith("A view was created in no_grad mode and is being modified inplace with grad "
                                        "mode enabled. Given that this use case is ambiguous and error-prone, it is "
                                        "forbidden. You can clarify your code by moving both the view and the inplace "
                                        "either both inside the no_grad block (if you don't want the inplace to be "
                                        "tracked) or both outside (if you want the inplace to be tracked)."));
  }
}

namespace {
struct ViewAsSelf : autograd::Function<ViewAsSelf> {
  static std::vector<Tensor> forward(autograd::AutogradContext*, Tensor x) { return {x.view_as(x)}; }
  static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor> grads) { return grads; }
};
struct Identity : autograd::Function<Identity> {
  static std::vector<Tensor> forward(autograd::AutogradContext*, Tensor x) { return {x}; }
  static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor> grads) { return grads; }
};
}  // namespace

TEST_CASE("test_inplace_not_requires_grad: a view made by a custom Function", "[copy_slices][pytorch]") {
  // a needs no grad, so the Function records no node: the view has no grad_fn.
  const char* custom = "A view was created in no_grad mode and is being modified inplace with grad mode enabled. This "
                       "view was created inside a custom Function (or because an input was returned as-is) and the "
                       "autograd logic to handle view+inplace would override the custom backward associated with the "
                       "custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this "
                       "by cloning the output of the custom Function.";
  {
    Tensor a = rand({1, 2}, kDouble);
    Tensor b = rand({1}, f64(true));
    Tensor view_a = ViewAsSelf::apply(a)[0];
    REQUIRE_THROWS_WITH(view_a.add_(b), custom);
  }
  {  // copy_ as well
    Tensor a = rand({1, 2}, kDouble);
    Tensor b = rand({1}, f64(true));
    Tensor view_a = ViewAsSelf::apply(a)[0];
    REQUIRE_THROWS_WITH(view_a.copy_(b), custom);
  }
  {  // an input returned as is is a view of it too
    Tensor a = rand({2}, kDouble).requires_grad_().clone();
    Tensor same = Identity::apply(a)[0];
    REQUIRE(same.is_view());
    REQUIRE_THROWS_WITH(same.mul_(2.0), Catch::StartsWith("Output 0 of IdentityBackward is a view and is being "
                                                          "modified inplace. This view was created inside a custom "
                                                          "Function"));
  }
  {  // unbind's outputs may not be written, even from a tensor that needs no grad
    Tensor a = rand({1, 2}, kDouble);
    Tensor b = rand({1}, f64(true));
    Tensor view_a = a.unbind()[0];
    REQUIRE_THROWS_WITH(view_a.copy_(b), Catch::Contains("This view is the output of a function that returns multiple "
                                                         "views."));
  }
  {  // views that should work still work
    Tensor a = rand({1, 2}, kDouble);
    Tensor b = rand({1}, f64(true));
    a.select(1, 0).copy_(b);
    a.sum().backward();
    REQUIRE(values(b.grad()) == std::vector<double>{1});
  }
}

TEST_CASE("test_version_counter: a view shares its base's version counter", "[copy_slices][pytorch]") {
  Tensor x = randn({1, 2});
  int64_t v = x._version();
  x.add_(1.0).add_(1.0);
  REQUIRE(x._version() > v);
  Tensor xz = x.slice(0, 0, 1);
  Tensor xzz = xz.view({2});  // a view of a view: the same base, the same counter
  REQUIRE(xzz._base().is_same(x));
  REQUIRE(x._version() == xz._version());
  xzz.add_(1.0);
  REQUIRE(x._version() == xz._version());
  REQUIRE(x._version() == xzz._version());
}

TEST_CASE("test_inplace_on_view_backprop_base", "[copy_slices][pytorch]") {
  // modify view and back-prop through base
  Tensor root = randn({2, 2}, f64(true));
  Tensor x = root.clone();
  Tensor v1 = x.narrow(0, 0, 1);
  v1.mul_(2.0);
  x.sum().backward();
  REQUIRE(values(root.grad()) == std::vector<double>{2, 2, 1, 1});
}

TEST_CASE("test_inplace_on_view_backprop_view_of_view", "[copy_slices][pytorch]") {
  // modify view and backprop through view-of-view
  Tensor root = randn({2, 2}, f64(true));
  Tensor x = root.clone();
  Tensor v1 = x.narrow(0, 0, 1);
  Tensor v2 = x.narrow(0, 0, 1);
  v1.mul_(2.0);
  v2.sum().backward();
  REQUIRE(values(root.grad()) == std::vector<double>{2, 2, 0, 0});
}

TEST_CASE("test_inplace_on_view_of_view", "[copy_slices][pytorch]") {
  // modify view-of-view and backprop through base
  Tensor root = randn({2, 2}, f64(true));
  Tensor x = root.clone();
  Tensor v1 = x.narrow(0, 0, 1);
  Tensor v2 = v1.narrow(1, 1, 1);
  v2.mul_(2.0);
  REQUIRE(v2._base().is_same(x));
  x.sum().backward();
  REQUIRE(values(root.grad()) == std::vector<double>{1, 2, 1, 1});
}

TEST_CASE("test_inplace_on_view_then_no_grad", "[copy_slices][pytorch]") {
  // Perform an in-place operation on a view of a non-leaf variable.
  Tensor a = ones({3, 1}, f64(true));
  Tensor b = a * 2.0;
  Tensor c = b.view_as(b);
  c.select(0, 0).select(0, 0).fill_(3.0);  // c[0][0] = 3
  {
    // Force a graph update with grad disabled.
    autograd::NoGradGuard no_grad;
    REQUIRE(c.grad_fn()->name() == "AsStridedBackward0");
  }
  c.sum().backward();
  REQUIRE(values(a.grad()) == std::vector<double>{0, 2, 2});
}

TEST_CASE("test_inplace_on_view_gradcheck", "[copy_slices][pytorch]") {
  // gradcheck modifications to views
  Tensor a = randn({4, 4}, f64(true));
  Tensor b = randn({2, 2}, f64(true));
  auto func = [](const std::vector<Tensor>& in) {
    Tensor x = in[0].clone();
    x.narrow(1, 2, 2).narrow(0, 1, 2).mul_(in[1]);
    x.narrow(1, 0, 2).narrow(0, 1, 2).mul_(in[1]);
    return std::vector<Tensor>{x};
  };
  REQUIRE(autograd::gradcheck(func, {a, b}));
  REQUIRE(autograd::gradgradcheck(func, {a, b}));
}

TEST_CASE("test_inplace_on_view_multiple_outputs", "[copy_slices][pytorch]") {
  Tensor root = arange(9, kDouble).reshape({3, 3}).requires_grad_();
  Tensor x = root.clone();
  std::vector<Tensor> v1 = x.unbind();
  REQUIRE_THROWS_WITH(v1[0].mul_(2.0), Catch::StartsWith("Output 0 of UnbindBackward0 is a view and is being "
                                                         "modified inplace. This view is the output of a function "
                                                         "that returns multiple views."));
}

TEST_CASE("test_inplace_on_view_of_multiple_output_view", "[copy_slices][pytorch]") {
  Tensor a = rand({10}, f64(true)).clone();
  std::vector<Tensor> b = a.unbind(0);
  Tensor c = b[0].view_as(b[0]);
  REQUIRE_THROWS_WITH(c.mul_(2.0), Catch::StartsWith("Output 0 of ViewBackward0 is a view and is being modified "
                                                     "inplace. This view is the output of a function that returns "
                                                     "multiple views."));
}

TEST_CASE("test_inplace_multiple_output_view_of_view", "[copy_slices][pytorch]") {
  Tensor a = rand({10}, f64(true)).clone();
  Tensor b = a.view_as(a);
  std::vector<Tensor> c = b.unbind(0);
  REQUIRE_THROWS_WITH(c[0].mul_(2.0), Catch::Contains("This view is the output of a function that returns multiple "
                                                      "views."));
  // A sibling's or the base's in-place change makes such a view unusable too (indirectly).
  std::vector<Tensor> d = a.unbind(0);
  a.mul_(2.0);
  REQUIRE_THROWS_WITH(d[3] * 2.0, Catch::StartsWith("Output 3 of UnbindBackward0 is a view and its base or another "
                                                    "view of its base has been modified inplace. This view is the "
                                                    "output of a function that returns multiple views."));
}

TEST_CASE("test_inplace_on_view_makes_base_require_grad", "[copy_slices][pytorch]") {
  // in-place modification to view makes base require grad
  Tensor a = randn({4, 4}, f64(false));
  Tensor b = randn({4, 2}, f64(true));
  auto func = [](const std::vector<Tensor>& in) {
    Tensor x = in[0].clone();
    REQUIRE_FALSE(x.requires_grad());
    x.narrow(1, 2, 2).mul_(in[1]);
    // gradcheck's finite differences run under no_grad, where nothing is recorded
    REQUIRE(x.requires_grad() == autograd::GradMode::is_enabled());
    return std::vector<Tensor>{x};
  };
  REQUIRE(autograd::gradcheck(func, {a, b}));
  REQUIRE(autograd::gradgradcheck(func, {a, b}));
}

TEST_CASE("test_inplace_on_view_backprop_view", "[copy_slices][pytorch]") {
  // modify view and backprop through view
  Tensor a = from_vector({2.0, 5.0}, {2});
  Tensor b = from_vector({3.0}, {1}).requires_grad_();
  Tensor view = a.narrow(0, 1, 1);
  Tensor res = view.mul_(b);
  res.sum().backward();
  REQUIRE(values(b.grad()) == std::vector<double>{5});
  REQUIRE_FALSE(a.grad().defined());
}

TEST_CASE("test_inplace_on_view_modify_base", "[copy_slices][pytorch]") {
  // An in-place op on a base that makes it require grad also makes its earlier views require
  // grad and backprop correctly.
  Tensor r = ones({1}, f64(true));
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor x = ones({5}, kDouble);
    Tensor v = x.select(0, 1);
    REQUIRE_FALSE(v.requires_grad());
    REQUIRE(v.grad_fn() == nullptr);
    x.add_(in[0]);  // v now depends on r through the in-place op on x
    REQUIRE(v.requires_grad() == autograd::GradMode::is_enabled());  // (finite differences: no_grad)
    return std::vector<Tensor>{v};
  };
  REQUIRE(autograd::gradcheck(fn, {r}));
  REQUIRE(autograd::gradgradcheck(fn, {r}));
}

namespace {
// In-place x += y of a view x, marked dirty.
struct PyAdd : autograd::Function<PyAdd> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, Tensor x, Tensor y) {
    ctx->mark_dirty({x});
    x.add_(y);
    return {x};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor> grads) {
    return {grads[0], grads[0]};
  }
};
}  // namespace

TEST_CASE("test_inplace_on_view_python", "[copy_slices][pytorch]") {
  // in-place modifications of a custom-Function-created view
  Tensor a = randn({4, 4}, f64(true));
  Tensor b = randn({2, 2}, f64(true));
  auto func = [](const std::vector<Tensor>& in) {
    Tensor x = in[0].clone();
    PyAdd::apply(x.narrow(1, 2, 2).narrow(0, 1, 2), in[1]);
    PyAdd::apply(x.narrow(1, 0, 2).narrow(0, 1, 2), in[1]);
    return std::vector<Tensor>{x};
  };
  REQUIRE(autograd::gradcheck(func, {a, b}));
  REQUIRE(autograd::gradgradcheck(func, {a, b}));
  Tensor x = a.clone();
  PyAdd::apply(x.narrow(1, 2, 2), b.narrow(0, 0, 1).expand({4, 2}));
  REQUIRE(x.grad_fn()->name() == "CopySlices");
}

namespace {
struct AddTwice : autograd::Function<AddTwice> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, Tensor x, Tensor y) {
    ctx->mark_dirty({x});
    x.add_(y);
    return {x, y * 2.0};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor> grads) {
    return {grads[0], grads[0] + grads[1] * 2.0};
  }
};
}  // namespace

TEST_CASE("A custom Function that modifies a view in place may return one tensor only", "[copy_slices]") {
  Tensor x = randn({4}, f64(true)).clone();
  Tensor y = randn({2}, f64(true));
  REQUIRE_THROWS_WITH(AddTwice::apply(x.narrow(0, 0, 2), y),
                      Catch::StartsWith("If your Function modifies inplace an input that is a view of another Tensor, "
                                        "your Function cannot return more than one Tensor.") &&
                          Catch::EndsWith("(AddTwiceBackward returns 2 tensors)"));
}

TEST_CASE("test_inplace_on_view_non_contig", "[copy_slices][pytorch]") {
  Tensor root = ones({2, 3, 2}, kDouble).select(2, 1).t().requires_grad_();
  Tensor x = root.clone();
  Tensor v1 = x.narrow(0, 0, 1);
  Tensor v2 = v1.narrow(1, 1, 1);
  v2.mul_(2.0);
  x.sum().backward();
  REQUIRE(values(root.grad()) == std::vector<double>{1, 2, 1, 1, 1, 1});
}

TEST_CASE("test_inplace_on_view_multi_output_safe", "[copy_slices][pytorch]") {
  // (each view's grad_fn: split's own node, as in PyTorch; split_with_sizes's, which chunk runs)
  std::vector<std::pair<std::function<std::vector<Tensor>(const Tensor&)>, std::string>> splits = {
      {[](const Tensor& t) { return t.split(1); }, "SplitBackward0"},
      {[](const Tensor& t) { return split_with_sizes(t, {1, 1, 1}); }, "SplitWithSizesBackward0"},
      {[](const Tensor& t) { return t.chunk(3); }, "SplitBackward0"},
  };
  for (const auto& [f, node] : splits) {
    Tensor a = randn({3, 3}, f64(true));
    Tensor b = a + a;
    std::vector<Tensor> s = f(b);
    REQUIRE(s.size() == 3);
    REQUIRE_THROWS_WITH(s[0].mul_(s[1]), Catch::StartsWith("Output 0 of " + node + " is a view and is "
                                                           "being modified inplace. This view is the output of a "
                                                           "function that returns multiple views."));
  }
}

namespace {
struct InplaceFunc : autograd::Function<InplaceFunc> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, Tensor x, Tensor other) {
    ctx->mark_dirty({x});
    x.mul_(2.0);
    return {x};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor> grads) {
    return {grads[0] * 2.0, Tensor()};
  }
};
}  // namespace

TEST_CASE("test_inplace_on_view_undefined_grad_output", "[copy_slices][pytorch]") {
  Tensor a = from_vector({1.0}, {1}).requires_grad_();
  Tensor c = a.clone();
  Tensor v = c.slice(0, 0, 1);  // c[:]
  Tensor b = from_vector({1.0}, {}).requires_grad_();
  Tensor out = InplaceFunc::apply(v, b)[0];
  out.backward();
  REQUIRE_FALSE(b.grad().defined());
  REQUIRE(a.grad().item() == 2.0);
}
