// No PyTorch counterpart (see engine/dispatch/stack_buffers.h).
// Tests engine/dispatch/stack_buffers.cpp (reused buffers of the dispatcher's short-lived stacks).
#include <catch2/catch.hpp>

#include <thread>

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

TEST_CASE("Each thread has its own buffers, made on first use and freed at its exit", "[stack_buffers]") {
  Stack mine = detail::take_stack(2);
  mine.emplace_back(1.0);
  const IValue* my_buffer = mine.data();
  detail::give_stack(std::move(mine));
  const IValue* other_buffer = nullptr;
  bool reused_there = false;
  std::thread t([&] {
    Stack s = detail::take_stack(2);
    s.emplace_back(2.0);
    other_buffer = s.data();
    detail::give_stack(std::move(s));
    reused_there = detail::take_stack(1).data() == other_buffer;
  });
  t.join();
  REQUIRE(reused_there);
  REQUIRE(other_buffer != my_buffer);
  REQUIRE(detail::take_stack(1).data() == my_buffer);  // this thread's buffer is still here
}
