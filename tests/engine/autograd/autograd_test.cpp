// Mirrors test/test_autograd.py (backward, grad, retain_graph, create_graph, inputs=, allow_unused).
// Tests engine/autograd/autograd.cpp (autograd::backward and autograd::grad: gradients,
// accumulation, retain_graph, create_graph, inputs=, allow_unused, argument errors).
#include <catch2/catch.hpp>

#include <cmath>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::f64;
using remat::testing::values;

namespace {
const std::vector<double> kX = {0.3, -1.2, 2.5};
const std::vector<double> kY = {1.5, 0.25, -2.0};
}  // namespace

TEST_CASE("Hand-derived gradients: d/dx sum(sin(x) * y) = cos(x) * y, d/dy = sin(x)", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor y = from_vector(kY, {3}, f64(true));
  Tensor loss = (x.sin() * y).sum();
  REQUIRE(loss.dim() == 0);
  loss.backward();
  for (size_t i = 0; i < 3; ++i) {
    REQUIRE(values(x.grad())[i] == Approx(std::cos(kX[i]) * kY[i]).epsilon(1e-14));
    REQUIRE(values(y.grad())[i] == Approx(std::sin(kX[i])).epsilon(1e-14));
  }
}

TEST_CASE("Hand-derived gradients through exp, log, div and mm", "[autograd]") {
  // loss = sum(exp(a) / b) + sum(log(b)): d/da = exp(a) / b, d/db = -exp(a) / b^2 + 1 / b
  Tensor a = from_vector(kX, {3}, f64(true));
  Tensor b = from_vector({0.5, 2.0, 4.0}, {3}, f64(true));
  ((a.exp() / b).sum() + b.log().sum()).backward();
  for (size_t i = 0; i < 3; ++i) {
    double bi = values(b)[i];
    REQUIRE(values(a.grad())[i] == Approx(std::exp(kX[i]) / bi).epsilon(1e-14));
    REQUIRE(values(b.grad())[i] == Approx(-std::exp(kX[i]) / (bi * bi) + 1.0 / bi).epsilon(1e-14));
  }
  // loss = sum(m @ w): d/dm[i][k] = sum_j w[k][j], d/dw[k][j] = sum_i m[i][k]
  Tensor m = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, f64(true));
  Tensor w = from_vector({1, -1, 2, 0, 0.5, 3}, {3, 2}, f64(true));
  mm(m, w).sum().backward();
  REQUIRE(values(m.grad()) == std::vector<double>{0, 2, 3.5, 0, 2, 3.5});
  REQUIRE(values(w.grad()) == std::vector<double>{5, 5, 7, 7, 9, 9});
}

TEST_CASE("Gradients with operands that need no grad (constants)", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor c = from_vector(kY, {3}, kDouble);
  ((x + c) + (c - x) * 2.0 + (c + x) * c).sum().backward();  // d/dx = 1 - 2 + c
  REQUIRE(values(x.grad()) == std::vector<double>{1 - 2 + kY[0], 1 - 2 + kY[1], 1 - 2 + kY[2]});
  Tensor z = from_vector(kX, {3}, f64(true));
  Tensor h = z * 1.0;
  h.add_(c);  // the added operand needs no gradient
  (h * h).sum().backward();
  for (size_t i = 0; i < 3; ++i) REQUIRE(values(z.grad())[i] == 2 * (kX[i] + kY[i]));
}

TEST_CASE("Gradients accumulate into .grad across two backwards", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  (x * x).sum().backward();  // 2x
  REQUIRE(values(x.grad()) == std::vector<double>{0.6, -2.4, 5.0});
  (x * 3.0).sum().backward();  // + 3
  REQUIRE(values(x.grad()) == std::vector<double>{0.6 + 3, -2.4 + 3, 5.0 + 3});
  // Two roots in one call: their gradients add too.
  Tensor z = from_vector({1, 2}, {2}, f64(true));
  autograd::backward({(z * 2.0).sum(), (z * z).sum()});
  REQUIRE(values(z.grad()) == std::vector<double>{4, 6});
}

TEST_CASE("Backward twice through freed buffers fails; retain_graph keeps them", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor loss = (x * x).sum();
  loss.backward();
  REQUIRE_THROWS_WITH(loss.backward(), Catch::StartsWith("Trying to backward through the graph a second time"));

  Tensor x2 = from_vector(kX, {3}, f64(true));
  Tensor loss2 = x2.exp().sum();
  loss2.backward({}, /*retain_graph=*/true);
  loss2.backward();  // the buffers were retained: runs, and accumulates
  for (size_t i = 0; i < 3; ++i) REQUIRE(values(x2.grad())[i] == Approx(2 * std::exp(kX[i])).epsilon(1e-14));
  REQUIRE_THROWS_WITH(loss2.backward(), Catch::Contains("Specify retain_graph=True"));
}

TEST_CASE("A graph without saved tensors can be backwarded twice", "[autograd]") {
  // add and sum save nothing, so there is nothing to free (as in PyTorch).
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor loss = (x + 1.0).sum();
  loss.backward();
  loss.backward();
  REQUIRE(values(x.grad()) == std::vector<double>{2, 2, 2});
}

TEST_CASE("grad() returns the gradients and leaves .grad untouched", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor y = from_vector(kY, {3}, f64(true));
  Tensor loss = (x * y).sum();
  std::vector<Tensor> g = autograd::grad({loss}, {x, y});
  REQUIRE(g.size() == 2);
  REQUIRE(values(g[0]) == kY);
  REQUIRE(values(g[1]) == kX);
  REQUIRE_FALSE(x.grad().defined());
  REQUIRE_FALSE(y.grad().defined());
  // Only what was asked for: the gradient of one input.
  Tensor loss2 = (x * y).sum();
  REQUIRE(values(autograd::grad({loss2}, {y})[0]) == kX);
  REQUIRE_FALSE(x.grad().defined());
  // With respect to a non-leaf.
  Tensor h = x * 2.0;
  Tensor loss3 = (h * h).sum();
  REQUIRE(values(autograd::grad({loss3}, {h})[0]) == values(h * 2.0));
  // With explicit grad_outputs.
  Tensor v = x * y;
  Tensor gv = from_vector({1, 10, 100}, {3}, kDouble);
  std::vector<double> expected = {kY[0], 10 * kY[1], 100 * kY[2]};
  REQUIRE(values(autograd::grad({v}, {x}, {gv})[0]) == expected);
}

TEST_CASE("grad() with an unused input: error, or an undefined gradient with allow_unused", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor unused = from_vector(kY, {3}, f64(true));
  Tensor loss = (x * x).sum();
  REQUIRE_THROWS_WITH(autograd::grad({loss}, {x, unused}, {}, /*retain_graph=*/true),
                      "One of the differentiated Tensors appears to not have been used in the graph. Set "
                      "allow_unused=True if this is the desired behavior.");
  std::vector<Tensor> g = autograd::grad({loss}, {x, unused}, {}, false, false, /*allow_unused=*/true);
  REQUIRE(values(g[0]) == values(x * 2.0));
  REQUIRE_FALSE(g[1].defined());
}

TEST_CASE("backward(inputs=) accumulates only into the given leaves", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor y = from_vector(kY, {3}, f64(true));
  autograd::backward({(x * y).sum()}, {}, false, false, /*inputs=*/{x});
  REQUIRE(values(x.grad()) == kY);
  REQUIRE_FALSE(y.grad().defined());
  autograd::backward({(x * y).sum()}, {}, false, false, /*inputs=*/{y});
  REQUIRE(values(x.grad()) == kY);  // unchanged
  REQUIRE(values(y.grad()) == kX);
}

TEST_CASE("backward(inputs=) into a non-leaf fills its .grad and nothing else", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor h = x * 2.0;
  Tensor loss = (h * h).sum();
  autograd::backward({loss}, {}, /*retain_graph=*/true, false, /*inputs=*/{h});
  REQUIRE(values(h.grad()) == values(h * 2.0));
  REQUIRE_FALSE(x.grad().defined());
  // Again: .grad of the non-leaf accumulates.
  autograd::backward({loss}, {}, /*retain_graph=*/true, false, /*inputs=*/{h});
  REQUIRE(values(h.grad()) == values(h * 4.0));
  // A leaf and a non-leaf together: both get their gradient.
  Tensor y = from_vector(kY, {3}, f64(true));
  Tensor k = x * y;
  autograd::backward({(k * k).sum()}, {}, false, false, /*inputs=*/{k, y});
  REQUIRE(values(k.grad()) == values(k * 2.0));
  REQUIRE(values(y.grad()) == values(k * 2.0 * x));
  REQUIRE_FALSE(x.grad().defined());
}

TEST_CASE("create_graph: second derivatives, d2/dx2 of x^3 = 6x", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor y = x.pow(3.0).sum();
  Tensor g = autograd::grad({y}, {x}, {}, false, /*create_graph=*/true)[0];
  REQUIRE(g.requires_grad());
  for (size_t i = 0; i < 3; ++i) REQUIRE(values(g)[i] == Approx(3 * kX[i] * kX[i]).epsilon(1e-14));
  Tensor g2 = autograd::grad({g.sum()}, {x})[0];
  for (size_t i = 0; i < 3; ++i) REQUIRE(values(g2)[i] == Approx(6 * kX[i]).epsilon(1e-14));

  // The same through products, and with backward(create_graph=true) into .grad.
  Tensor z = from_vector(kX, {3}, f64(true));
  (z * z * z).sum().backward({}, false, /*create_graph=*/true);
  Tensor first = z.grad();
  REQUIRE(first.requires_grad());
  Tensor second = autograd::grad({first.sum()}, {z})[0];
  for (size_t i = 0; i < 3; ++i) REQUIRE(values(second)[i] == Approx(6 * kX[i]).epsilon(1e-14));
  // z.grad's graph ends at z's AccumulateGrad, which holds z: a reference cycle, as in PyTorch
  // (which warns about it). Resetting .grad breaks it.
  z.set_grad(Tensor());
  // Third derivative of x^3 is 6.
  Tensor w = from_vector(kX, {3}, f64(true));
  Tensor d1 = autograd::grad({w.pow(3.0).sum()}, {w}, {}, false, true)[0];
  Tensor d2 = autograd::grad({d1.sum()}, {w}, {}, false, true)[0];
  Tensor d3 = autograd::grad({d2.sum()}, {w})[0];
  for (size_t i = 0; i < 3; ++i) REQUIRE(values(d3)[i] == Approx(6.0).epsilon(1e-14));
}

TEST_CASE("Without create_graph the gradient has no history", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor g = autograd::grad({x.pow(3.0).sum()}, {x})[0];
  REQUIRE_FALSE(g.requires_grad());
  REQUIRE(g.grad_fn() == nullptr);
}

TEST_CASE("Tensor::backward with an explicit gradient", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  (x * 2.0).backward(from_vector({1, 2, 3}, {3}, kDouble));
  REQUIRE(values(x.grad()) == std::vector<double>{2, 4, 6});
}

TEST_CASE("backward/grad argument errors", "[autograd]") {
  Tensor x = from_vector(kX, {3}, f64(true));
  Tensor plain = from_vector(kX, {3}, kDouble);
  REQUIRE_THROWS_WITH((x * 2.0).backward(),
                      "grad can be implicitly created only for scalar outputs (tensor 0 has shape [3])");
  REQUIRE_THROWS_WITH((x * 2.0).backward(ones({2}, kDouble)),
                      "backward: Mismatch in shape: grad_output[0] has a shape of [2] and output[0] has a shape of [3].");
  REQUIRE_THROWS_WITH(plain.sum().backward(),
                      "element 0 of tensors does not require grad and does not have a grad_fn");
  REQUIRE_THROWS_WITH(autograd::grad({x.sum(), x.sum()}, {x}, {ones({}, kDouble)}),
                      "grad: got 1 gradients for 2 tensors");
  REQUIRE_THROWS_WITH(autograd::grad({x.sum()}, {}), "grad requires non-empty inputs.");
  REQUIRE_THROWS_WITH(autograd::grad({x.sum()}, {plain}), "One of the differentiated Tensors does not require grad");
  REQUIRE_THROWS_WITH(autograd::backward({x.sum()}, {}, false, false, {plain}),
                      "backward: One of the differentiated Tensors does not require grad");
  REQUIRE_THROWS_WITH(autograd::backward({Tensor()}), "backward: tensor 0 is undefined");
}
