// Mirrors aten/src/ATen/core/op_registration/op_registration_test.cpp (key guards).
// Tests engine/dispatch/local_dispatch_key_set.h (thread-local included/excluded keys, guards).
#include <catch2/catch.hpp>

#include <thread>

#include "remat.h"

using namespace remat;

TEST_CASE("Include and exclude guards nest and restore the previous sets", "[local_dispatch_key_set]") {
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  const DispatchKeySet inc0 = tls.included, exc0 = tls.excluded;
  {
    IncludeDispatchKeyGuard a(DispatchKey::Autocast);
    REQUIRE(tls.included.has(DispatchKey::Autocast));
    {
      ExcludeDispatchKeyGuard b(DispatchKey::Autograd);
      ExcludeDispatchKeyGuard c(DispatchKeySet(DispatchKey::Python).add(DispatchKey::Meta));
      REQUIRE(tls.excluded.has(DispatchKey::Autograd));
      REQUIRE(tls.excluded.has(DispatchKey::Python));
      REQUIRE(tls.excluded.has(DispatchKey::Meta));
      {
        LocalDispatchKeySetGuard whole;
        tls.included = DispatchKeySet();
        tls.excluded = DispatchKeySet(DispatchKey::CPU);
      }
      REQUIRE(tls.included.has(DispatchKey::Autocast));  // restored by the whole-state guard
      REQUIRE(tls.excluded.has(DispatchKey::Autograd));
      REQUIRE_FALSE(tls.excluded.has(DispatchKey::CPU));
    }
    REQUIRE(tls.excluded == exc0);
    REQUIRE(tls.included.has(DispatchKey::Autocast));
  }
  REQUIRE(tls.included == inc0);
  REQUIRE(tls.excluded == exc0);
}

TEST_CASE("Excluding Autograd runs an op below autograd: no graph is recorded", "[local_dispatch_key_set]") {
  Tensor x = ones({3}, TensorOptions().dtype(kDouble).requires_grad(true));
  Tensor recorded = sin(x);
  REQUIRE(recorded.grad_fn() != nullptr);
  Tensor below;
  {
    ExcludeDispatchKeyGuard g(DispatchKey::Autograd);
    below = sin(x);
  }
  REQUIRE(below.grad_fn() == nullptr);
  REQUIRE_FALSE(below.requires_grad());
  REQUIRE(equal(below, recorded.detach()));
}

TEST_CASE("The local key sets belong to one thread", "[local_dispatch_key_set]") {
  ExcludeDispatchKeyGuard g(DispatchKey::Autograd);
  IncludeDispatchKeyGuard h(DispatchKey::Autocast);
  LocalDispatchKeySet other;
  std::thread t([&] { other = tls_local_dispatch_key_set(); });
  t.join();
  REQUIRE(other.excluded.empty());
  REQUIRE(other.included.empty());
}
