// Mirrors c10/test/util/intrusive_ptr_test.cpp.
// Tests engine/core/intrusive_ptr.h (in-object reference counting).
#include <catch2/catch.hpp>

#include "engine/core/intrusive_ptr.h"

using remat::intrusive_ptr;
using remat::intrusive_ptr_target;
using remat::make_intrusive;

namespace {
struct Counted : intrusive_ptr_target {
  explicit Counted(int* alive) : alive_(alive) { ++*alive_; }
  ~Counted() override { --*alive_; }
  int* alive_;
};
struct Derived : Counted {
  using Counted::Counted;
};
}  // namespace

TEST_CASE("intrusive_ptr counts references and deletes with the last one", "[intrusive_ptr]") {
  int alive = 0;
  {
    intrusive_ptr<Counted> a = make_intrusive<Counted>(&alive);
    REQUIRE(alive == 1);
    REQUIRE(a.use_count() == 1);
    intrusive_ptr<Counted> b = a;
    REQUIRE(a.use_count() == 2);
    REQUIRE(a == b);
    intrusive_ptr<Counted> c = std::move(b);
    REQUIRE_FALSE(b);
    REQUIRE(a.use_count() == 2);
    c.reset();
    REQUIRE(a.use_count() == 1);
    REQUIRE(alive == 1);
    a = make_intrusive<Counted>(&alive);  // the old object goes
    REQUIRE(alive == 1);
    a = a;  // NOLINT: self-assignment keeps it
    REQUIRE(alive == 1);
    REQUIRE(a.use_count() == 1);
  }
  REQUIRE(alive == 0);
}

TEST_CASE("intrusive_ptr upcasts by moving the reference", "[intrusive_ptr]") {
  int alive = 0;
  {
    intrusive_ptr<Derived> d = make_intrusive<Derived>(&alive);
    intrusive_ptr<Counted> base(std::move(d));
    REQUIRE_FALSE(d);
    REQUIRE(base.use_count() == 1);  // moved, not shared
    REQUIRE(alive == 1);
  }
  REQUIRE(alive == 0);
}

TEST_CASE("Copying a target does not copy its reference count", "[intrusive_ptr]") {
  struct Plain : intrusive_ptr_target {};
  intrusive_ptr<Plain> a = make_intrusive<Plain>();
  intrusive_ptr<Plain> b = a;
  Plain copy(*a);
  REQUIRE(a.use_count() == 2);
  REQUIRE(copy.use_count() == 0);
}
