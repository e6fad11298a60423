// Tests ops/autograd/autograd_kernel.cpp: the autograd kernel saves a rule's tensor only when a
// gradient that reads it is needed (PyTorch's should_compute_output guards in the generated
// VariableType code), unpacks each saved tensor once per backward call, and reports a rule that
// reads what it did not save.
#include <catch2/catch.hpp>

#include <any>

#include "ops/autograd/derivative.h"
#include "remat.h"
#include "tests/testing/matchers.h"

using namespace remat;
using remat::testing::What;
using Catch::Matchers::Contains;

namespace {

Tensor mul_kernel(const Tensor& a, const Tensor& b) { return a * b; }
Tensor scale_kernel(const Tensor& a, double s) { return a * s; }

}  // namespace

// Two ops whose derivative rules are wrong on purpose (below).
REMAT_LIBRARY_FRAGMENT(kerneltest, m) {
  m.def("reads_unsaved(Tensor self, Tensor other) -> Tensor");
  m.def("saved_for_scalar(Tensor self, float s) -> Tensor");
}
REMAT_LIBRARY_IMPL(kerneltest, CPU, m) {
  m.impl("reads_unsaved", REMAT_FN(mul_kernel));
  m.impl("saved_for_scalar", REMAT_FN(scale_kernel));
}

namespace {

using ops::autograd::BackwardContext;
using ops::autograd::Derivative;
using ops::autograd::SavedTensor;

struct RegisterBadRules {
  RegisterBadRules() {
    // out = self * other, but self's gradient reads self, which the entry saves for other's only
    Derivative reads_unsaved;
    reads_unsaved.op = "kerneltest::reads_unsaved";
    reads_unsaved.saved = {{SavedTensor::Kind::Argument, 0, {1}}, {SavedTensor::Kind::Argument, 1, {0}}};
    reads_unsaved.formula = [](const BackwardContext& c) -> std::vector<Tensor> {
      return {c.needs(0) ? mul(c.grad(), c.input(0)) : Tensor(), c.needs(1) ? mul(c.grad(), c.input(0)) : Tensor()};
    };
    ops::autograd::register_derivative(std::move(reads_unsaved));
    // an entry naming a float argument's gradient
    Derivative saved_for_scalar;
    saved_for_scalar.op = "kerneltest::saved_for_scalar";
    saved_for_scalar.saved = {{SavedTensor::Kind::Argument, 0, {1}}};
    saved_for_scalar.formula = [](const BackwardContext& c) -> std::vector<Tensor> { return {c.grad()}; };
    ops::autograd::register_derivative(std::move(saved_for_scalar));
  }
} register_bad_rules;

// Counts pack and unpack calls; keeps detached aliases (see derivatives_test.cpp's SaveRecorder).
struct CountingHooks {
  int packs = 0, unpacks = 0;
  std::vector<Tensor> packed;
  autograd::saved_tensors_hooks hooks{[this](const Tensor& t) -> std::any {
                                        ++packs;
                                        packed.push_back(t.detach());
                                        return t.detach();
                                      },
                                      [this](const std::any& a) {
                                        ++unpacks;
                                        return std::any_cast<Tensor>(a);
                                      }};
};

}  // namespace

TEST_CASE("a frozen weight: mm saves W for x's gradient and not x (PyTorch's 128 KiB)", "[autograd_kernel][saved]") {
  // relu(mm(x * 1.0, W)), x [128, 256] f32 requiring grad, W [256, 256]: mm saves W (a leaf, no
  // extra memory) for x's gradient, not x * 1.0 (W's gradient is not needed); relu saves its
  // result. What forward leaves allocated is that result alone.
  Generator gen(1);
  Tensor x = randn({128, 256}, {}, &gen).requires_grad_();
  Tensor frozen = randn({256, 256}, {}, &gen);
  const int64_t result_bytes = 128 * 256 * 4;
  auto forward = [&](const Tensor& w) { return relu(mm(x * 1.0, w)); };

  SECTION("frozen: 128 KiB, and the packed tensors are W and the result") {
    const int64_t before = memory_allocated();
    CountingHooks counting;
    Tensor y = forward(frozen);
    CHECK(memory_allocated() - before == result_bytes);
    REQUIRE(counting.packs == 2);
    CHECK(counting.packed[0].is_alias_of(frozen));
    CHECK(counting.packed[1].is_alias_of(y));
  }
  SECTION("trainable: x * 1.0 is kept too, 256 KiB") {
    Tensor trainable = frozen.detach().requires_grad_();
    const int64_t before = memory_allocated();
    Tensor y = forward(trainable);
    CHECK(memory_allocated() - before == 2 * result_bytes);
  }
  SECTION("x's gradient is the same either way, bitwise") {
    Tensor trainable = frozen.detach().requires_grad_();
    forward(trainable).sum().backward();
    Tensor want = x.grad().clone();
    x.set_grad(Tensor());
    forward(frozen).sum().backward();
    REQUIRE(x.grad().defined());
    CHECK(equal(x.grad(), want));
  }
}

TEST_CASE("a saved tensor read by two gradients is unpacked once", "[autograd_kernel][saved]") {
  // div saves other for both gradients: one unpack per backward call, as the generated apply()
  // unpacks each SavedVariable once (a checkpoint holder can be unpacked only once).
  Tensor a = randn({3}).requires_grad_(), b = add(rand({3}), 1.0).requires_grad_();
  CountingHooks counting;
  Tensor y = div(a, b);
  REQUIRE(counting.packs == 2);
  y.sum().backward();
  CHECK(counting.unpacks == 2);

  // The same inside a checkpoint, where a second unpack would fail.
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  div(a, b).sum().backward();
  Tensor ga = a.grad().clone(), gb = b.grad().clone();
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  checkpoint([](const std::vector<Tensor>& v) { return std::vector<Tensor>{div(v[0], v[1])}; }, {a, b})[0]
      .sum()
      .backward();
  CHECK(equal(a.grad(), ga));
  CHECK(equal(b.grad(), gb));
}

TEST_CASE("the saving decision ignores the graph task: grad(inputs=) with create_graph", "[autograd_kernel][saved]") {
  // Backward formulas run under a graph task that computes x's gradient only; the nodes they
  // record (create_graph) still save what their own inputs' gradients read, so a second
  // derivative through them works.
  Tensor x = randn({4}).requires_grad_(), w = randn({4}).requires_grad_();
  Tensor y = mul(mul(x, x), w);  // dy/dx = 2 x w
  Tensor gx = autograd::grad({y.sum()}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  Tensor gxw = autograd::grad({gx.sum()}, {w})[0];  // d/dw sum(2 x w) = 2 x
  CHECK(allclose(gxw, mul(x.detach(), 2.0)));
}

TEST_CASE("a rule that reads a tensor it did not save names the op and the entry", "[autograd_kernel][saved]") {
  const OperatorHandle op = find_op("kerneltest::reads_unsaved");
  Tensor a = randn({3}).requires_grad_(), b = randn({3});
  Tensor y = op.call({a, b})[0].toTensor();
  REQUIRE_THROWS_MATCHES(y.sum().backward(), Error,
                         What(Contains("derivative of kerneltest::reads_unsaved reads argument 0, which it did not "
                                       "save: its table entry saves it only for the gradients of arguments [1], and "
                                       "none of them is needed")));
  // With other requiring grad too, self is saved and the rule runs.
  Tensor b2 = randn({3}).requires_grad_();
  REQUIRE_NOTHROW(op.call({a, b2})[0].toTensor().sum().backward());
}

TEST_CASE("a table entry naming a non-tensor argument's gradient is an error", "[autograd_kernel][saved]") {
  const OperatorHandle op = find_op("kerneltest::saved_for_scalar");
  Tensor a = randn({3}).requires_grad_();
  for (int attempt = 0; attempt < 2; ++attempt) {  // the layout is checked again, not half-recorded
    REQUIRE_THROWS_MATCHES(op.call({a, IValue(2.0)}), Error,
                           What(Contains("derivative of kerneltest::saved_for_scalar: a saved tensor is read by the "
                                         "gradient of argument 1, which is not a Tensor argument")));
  }
  // Without grad the rule is never consulted.
  autograd::NoGradGuard no_grad;
  CHECK(op.call({a, IValue(2.0)})[0].toTensor().sizes() == Shape{3});
}
