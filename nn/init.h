// Mirrors torch/nn/init.py: the initialisations PyTorch's modules use by default.
#pragma once

#include "engine/core/generator.h"
#include "engine/core/tensor.h"

namespace remat::nn::init {

// U(-bound, bound) in place (under no-grad).
Tensor& uniform_(Tensor& t, double low, double high, Generator* generator = nullptr);
// N(mean, std^2) in place.
Tensor& normal_(Tensor& t, double mean, double std, Generator* generator = nullptr);
// nn.Linear's default: kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
Tensor& kaiming_uniform_linear_(Tensor& weight, Generator* generator = nullptr);
int64_t fan_in(const Tensor& weight);

}  // namespace remat::nn::init
