// Mirrors c10/test/core/DispatchKeySet_test.cpp.
// Tests engine/core/dispatch_key_set.h and dispatch_key.h (key order, sets, priority).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("Dispatch keys are ordered backends < Python < Autograd < Autocast", "[dispatch_key]") {
  REQUIRE(DispatchKey::CPU < DispatchKey::Python);
  REQUIRE(DispatchKey::CUDA < DispatchKey::Python);
  REQUIRE(DispatchKey::Meta < DispatchKey::Python);
  REQUIRE(DispatchKey::Python < DispatchKey::Autograd);
  REQUIRE(DispatchKey::Autograd < DispatchKey::Autocast);
  REQUIRE(std::string(toString(DispatchKey::Python)) == "Python");
  REQUIRE(std::string(toString(DispatchKey::Autocast)) == "Autocast");
  REQUIRE(backendKey(kCPU) == DispatchKey::CPU);
  REQUIRE(backendKey(kCUDA) == DispatchKey::CUDA);
  REQUIRE(backendKey(kMeta) == DispatchKey::Meta);
  REQUIRE(isBackendKey(DispatchKey::Meta));
  REQUIRE_FALSE(isBackendKey(DispatchKey::Python));
}

TEST_CASE("DispatchKeySet: add, remove, has, set algebra", "[dispatch_key_set]") {
  DispatchKeySet s;
  REQUIRE(s.empty());
  REQUIRE(DispatchKeySet(DispatchKey::Undefined).empty());
  s = s.add(DispatchKey::CPU).add(DispatchKey::Autograd);
  REQUIRE(s.has(DispatchKey::CPU));
  REQUIRE(s.has(DispatchKey::Autograd));
  REQUIRE_FALSE(s.has(DispatchKey::Python));
  REQUIRE(s.remove(DispatchKey::Autograd) == DispatchKeySet(DispatchKey::CPU));
  DispatchKeySet t = DispatchKeySet(DispatchKey::Python) | DispatchKeySet(DispatchKey::CPU);
  REQUIRE((s & t) == DispatchKeySet(DispatchKey::CPU));
  REQUIRE((s - t) == DispatchKeySet(DispatchKey::Autograd));
  REQUIRE((s | t).raw() == (s.raw() | t.raw()));
  REQUIRE(DispatchKeySet::fromRaw(s.raw()) == s);
  REQUIRE(s != t);
}

TEST_CASE("highestPriorityKey picks the highest key; below(k) is every key under k", "[dispatch_key_set]") {
  DispatchKeySet cpu(DispatchKey::CPU);
  REQUIRE(DispatchKeySet().highestPriorityKey() == DispatchKey::Undefined);
  REQUIRE(cpu.highestPriorityKey() == DispatchKey::CPU);
  REQUIRE(cpu.add(DispatchKey::Python).highestPriorityKey() == DispatchKey::Python);
  REQUIRE(cpu.add(DispatchKey::Python).add(DispatchKey::Autograd).highestPriorityKey() == DispatchKey::Autograd);
  REQUIRE(cpu.add(DispatchKey::Autocast).add(DispatchKey::Autograd).highestPriorityKey() == DispatchKey::Autocast);

  DispatchKeySet below = DispatchKeySet::below(DispatchKey::Autograd);
  REQUIRE(below.has(DispatchKey::CPU));
  REQUIRE(below.has(DispatchKey::CUDA));
  REQUIRE(below.has(DispatchKey::Meta));
  REQUIRE(below.has(DispatchKey::Python));
  REQUIRE_FALSE(below.has(DispatchKey::Autograd));
  REQUIRE_FALSE(below.has(DispatchKey::Autocast));
  REQUIRE(DispatchKeySet::below(DispatchKey::CPU).highestPriorityKey() == DispatchKey::Undefined);
  // A kernel at Python redispatching with (ks & below(Python)) reaches the backend.
  REQUIRE((cpu.add(DispatchKey::Python) & DispatchKeySet::below(DispatchKey::Python)).highestPriorityKey() ==
          DispatchKey::CPU);
}

TEST_CASE("DispatchKeySet::str lists keys lowest first", "[dispatch_key_set]") {
  REQUIRE(DispatchKeySet().str() == "DispatchKeySet()");
  REQUIRE(DispatchKeySet(DispatchKey::Autograd).add(DispatchKey::CPU).add(DispatchKey::Python).str() ==
          "DispatchKeySet(CPU, Python, Autograd)");
}
