// No PyTorch counterpart (see engine/dispatch/stack_buffers.h).
// Tests engine/dispatch/stack_buffers.cpp (reused buffers of the dispatcher's short-lived stacks).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("give_stack releases the values now; take_stack reuses the buffer", "[stack_buffers]") {
  Tensor t = zeros({2});
  Stack s = detail::take_stack(3);
  REQUIRE(s.empty());
  REQUIRE(s.capacity() >= 3);
  s.emplace_back(t);
  s.emplace_back(2.0);
  const IValue* buffer = s.data();
  REQUIRE(t.use_count() == 2);
  detail::give_stack(std::move(s));
  REQUIRE(t.use_count() == 1);
  Stack again = detail::take_stack(2);
  REQUIRE(again.empty());
  REQUIRE(again.data() == buffer);
  // A larger request than the reused buffer holds still gets its capacity.
  detail::give_stack(std::move(again));
  REQUIRE(detail::take_stack(64).capacity() >= 64);
}
