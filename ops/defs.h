// Mirrors native_functions.yaml read as a whole (torchgen's list of every NativeFunction): every
// family's Defs, for what registers something per op from the Defs alone (the derivatives:
// ops/autograd/derivatives.h; the autocast policies: ops/autocast.cpp). A new op of an existing
// family needs nothing here; a new family adds its for_each_*_def below.
#pragma once

#include "ops/attention_defs.h"
#include "ops/complex_defs.h"
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

namespace remat::ops {

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
  for_each_complex_def(f);
}

}  // namespace remat::ops
