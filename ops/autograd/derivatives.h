// Mirrors tools/autograd/gen_variable_type.py (and load_derivatives.py): the walk that turns each
// derivatives.yaml entry into an autograd kernel. Here the entries are the Defs' derivative() and
// inplace_derivative() members (ops/autograd/derivative_rules.h), and the walk goes over every
// Def (ops/defs.h), so a new op needs nothing here.
#pragma once

#include "ops/autograd/derivative_rules.h"
#include "ops/defs.h"

namespace remat::ops::autograd {

// f(d) for every rule the Defs give, each named by its Def (what ops/autograd/derivatives.cpp
// registers, and what tests/ops/autograd/derivative_rules_test.cpp checks).
template <class F>
void for_each_derivative(const F& f) {
  for_each_def([&](auto def) { for_each_derivative_of<typename decltype(def)::type>(f); });
}

}  // namespace remat::ops::autograd
