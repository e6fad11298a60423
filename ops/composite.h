// Mirrors the CompositeImplicitAutograd alias key: an op implemented by calling other ops.
// Its kernel is registered at every backend, the mode key and Autograd, so it decomposes first
// and both autograd and dispatch modes see only the ops it is made of (a SAC policy sees the
// mm inside linear, not linear).
#pragma once

#include "engine/dispatch/library.h"

namespace remat::ops {

inline void impl_composite(Library& m, const std::string& name, const KernelFunction& kernel) {
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta, DispatchKey::Python,
                        DispatchKey::Autograd}) {
    m.impl(name, k, kernel);
  }
}

}  // namespace remat::ops
