// Mirrors torchgen's generated NativeMetaFunctions.h for Distributions.cpp's in-place random
// fills (uniform_, normal_): their Defs (ops/structured.h: name, schema with its
// nondeterministic_seeded tag, C++ signature, the checks every backend runs), so that each exists
// once. The kernels are ops/factory.cpp's and ops/cuda/factory.cpp's: each reserves one offset
// from the generator (the Meta kernel: from an explicit one only), an empty self included, so
// they are registered by hand from the Defs rather than through structured::impl (which skips
// an empty self).
//
// A fill draws into a contiguous buffer: self, or a temporary copied into self afterwards
// (random_fill_target). Every backend's kernel and the Meta kernel make it, so that a dry run
// allocates what the backend allocates.
#pragma once

#include "engine/core/generator.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

// What a random fill of self draws into: self when contiguous, else a new contiguous tensor.
inline Tensor random_fill_target(const Tensor& self) {
  return self.is_contiguous() ? self : make_empty(self.sizes(), self.dtype(), self.device());
}

struct structured_uniform_ {
  using Sig = Tensor(const Tensor&, double, double, Generator*);
  static constexpr const char* inplace_name = "aten::uniform_";
  static constexpr const char* inplace_schema =
      "(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)";
  static constexpr Tag inplace_tags[] = {Tag::nondeterministic_seeded};
  static void inplace_meta(const char*, const Tensor& self, double from, double to, Generator*) {
    check_uniform(self, from, to);
  }
  // self = U(from, to): nothing flows to self's old value
  static autograd::Derivative inplace_derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {zeros_like(c.grad())}; });
  }
};
struct structured_normal_ {
  using Sig = Tensor(const Tensor&, double, double, Generator*);
  static constexpr const char* inplace_name = "aten::normal_";
  static constexpr const char* inplace_schema =
      "(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)";
  static constexpr Tag inplace_tags[] = {Tag::nondeterministic_seeded};
  static void inplace_meta(const char*, const Tensor& self, double, double std, Generator*) { check_normal(self, std); }
  // self = N(mean, std): nothing flows to self's old value
  static autograd::Derivative inplace_derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {zeros_like(c.grad())}; });
  }
};

// The Meta kernel of a random fill: the checks, the explicit generator's offset, the buffer.
template <class Def>
Tensor random_fill_meta(const Tensor& self, double a, double b, Generator* generator) {
  Def::inplace_meta(Def::inplace_name, self, a, b, generator);
  if (generator != nullptr) generator->reserve();
  const Tensor dst = random_fill_target(self);
  self.impl()->bump_version();
  return self;
}

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_factory_def(const F& f) {
  f(structured::DefTag<structured_uniform_>{});
  f(structured::DefTag<structured_normal_>{});
}

}  // namespace remat::ops
