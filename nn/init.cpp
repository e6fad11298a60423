// Mirrors torch/nn/init.py.
#include "nn/init.h"

#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "ops/functions.h"

namespace remat::nn::init {

Tensor& uniform_(Tensor& t, double low, double high, Generator* generator) {
  autograd::NoGradGuard no_grad;
  return remat::uniform_(t, low, high, generator);
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* generator) {
  autograd::NoGradGuard no_grad;
  return remat::normal_(t, mean, std, generator);
}

int64_t fan_in(const Tensor& weight) {
  REMAT_CHECK(weight.dim() >= 2, "init: Fan in can not be computed for tensor with fewer than 2 dimensions (shape ",
              weight.sizes(), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < weight.dim(); ++d) receptive *= weight.size(d);
  return weight.size(1) * receptive;
}

Tensor& kaiming_uniform_linear_(Tensor& weight, Generator* generator) {
  // gain = sqrt(2 / (1 + a^2)) with a = sqrt(5); bound = gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in)
  double bound = 1.0 / std::sqrt(static_cast<double>(fan_in(weight)));
  return init::uniform_(weight, -bound, bound, generator);
}

}  // namespace remat::nn::init
