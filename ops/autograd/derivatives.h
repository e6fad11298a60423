// Mirrors tools/autograd/gen_variable_type.py (and load_derivatives.py): the walk that turns each
// derivatives.yaml entry into an autograd kernel. Here the entries are the Defs' derivative() and
// inplace_derivative() members (ops/autograd/derivative_rules.h), and the walk goes over every
// family's for_each_*_def, so a new op of an existing family needs nothing here; a new family adds
// its for_each_*_def below.
#pragma once

#include "ops/attention_defs.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/copy_defs.h"
#include "ops/dropout_defs.h"
#include "ops/embedding_defs.h"
#include "ops/factory_defs.h"
#include "ops/fused_optimizer_defs.h"
#include "ops/linalg_defs.h"
#include "ops/loss_defs.h"
#include "ops/normalization_defs.h"
#include "ops/pointwise_defs.h"
#include "ops/reduction_defs.h"
#include "ops/softmax_defs.h"
#include "ops/view_defs.h"

namespace remat::ops::autograd {

// f(structured::DefTag<Def>{}) for every Def of every family.
template <class F>
void for_each_def(const F& f) {
  for_each_pointwise_def(f);
  for_each_linalg_def(f);
  for_each_reduction_def(f);
  for_each_view_def(f);
  for_each_copy_def(f);
  for_each_factory_def(f);
  for_each_softmax_def(f);
  for_each_normalization_def(f);
  for_each_dropout_def(f);
  for_each_embedding_def(f);
  for_each_loss_def(f);
  for_each_flash_attention_def(f);
  for_each_efficient_attention_def(f);
  for_each_fused_optimizer_def(f);
}

// f(d) for every rule the Defs give, each named by its Def (what ops/autograd/derivatives.cpp
// registers, and what tests/ops/autograd/derivatives_test.cpp checks).
template <class F>
void for_each_derivative(const F& f) {
  for_each_def([&](auto def) { for_each_derivative_of<typename decltype(def)::type>(f); });
}

}  // namespace remat::ops::autograd
