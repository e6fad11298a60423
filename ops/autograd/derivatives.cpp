// Mirrors the generated torch/csrc/autograd/generated/VariableType*.cpp's registrations
// (gen_variable_type.py): an autograd kernel for each derivative rule. The rules are not here:
// each op's is its Def's derivative() (derivatives.yaml's entry, beside native_functions.yaml's,
// in its ops/*_defs.h family header), and their shared helpers (FunctionsManual.cpp) are
// ops/autograd/derivative_rules.h.
#include "ops/autograd/derivatives.h"

namespace remat::ops::autograd {
namespace {

struct RegisterDerivatives {
  RegisterDerivatives() {
    for_each_derivative([](Derivative d) { register_derivative(std::move(d)); });
  }
} register_derivatives;

}  // namespace
}  // namespace remat::ops::autograd
