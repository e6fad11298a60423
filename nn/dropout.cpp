// Mirrors torch/nn/modules/dropout.py.
#include "nn/dropout.h"

#include "ops/functions.h"

namespace remat::nn {

Dropout::Dropout(double prob, Generator* gen) : Module("Dropout"), p(prob), generator(gen) {
  REMAT_CHECK(p >= 0.0 && p <= 1.0, "Dropout: dropout probability has to be between 0 and 1, but got ", p);
}

Tensor Dropout::forward(const Tensor& x) const {
  auto s = enter();
  return dropout(x, p, is_training(), generator);
}

}  // namespace remat::nn
