#include <catch2/catch.hpp>
#include <iostream>
#include "remat.h"
using namespace remat;
TEST_CASE("smoke") {
  Tensor a = from_vector({1, 2, 3, 4}, {2, 2}, kDouble).requires_grad_();
  Tensor b = from_vector({5, 6, 7, 8}, {2, 2}, kDouble).requires_grad_();
  Tensor y = (mm(a, b) * a).sin().sum();
  y.backward();
  INFO(a.grad());
  INFO(b.grad());
  REQUIRE(a.grad().defined());
  std::cout << a.grad() << "\n" << b.grad() << "\n";
  REQUIRE(autograd::gradcheck([](const std::vector<Tensor>& x) { return std::vector<Tensor>{(mm(x[0], x[1]) * x[0]).sin()}; }, {a, b}));
}
