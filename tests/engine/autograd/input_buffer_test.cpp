// Mirrors test/test_autograd.py (gradients summed into one node input).
// Tests engine/autograd/input_buffer.cpp (summing the gradients that flow into a node input).
#include <catch2/catch.hpp>

#include "remat.h"
#include "engine/autograd/input_buffer.h"

using namespace remat;
using remat::autograd::InputBuffer;

TEST_CASE("InputBuffer sums per slot and ignores undefined gradients", "[input_buffer]") {
  InputBuffer buf(2);
  REQUIRE(buf.size() == 2);
  Tensor a = from_vector({1, 2}, {2}, kDouble);
  buf.add(0, a);
  buf.add(0, Tensor());
  buf.add(1, Tensor());
  std::vector<Tensor> once = InputBuffer(buf).take();
  REQUIRE(once[0].is_same(a));  // a single gradient is passed on as is, not copied
  REQUIRE_FALSE(once[1].defined());
  buf.add(0, from_vector({10, 20}, {2}, kDouble));
  std::vector<Tensor> out = buf.take();
  REQUIRE(out[0].to_vector() == std::vector<double>{11, 22});
  REQUIRE(a.to_vector() == std::vector<double>{1, 2});  // summed out of place
}
