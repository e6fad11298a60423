// Mirrors torch/nn/modules/linear.py.
#include "nn/linear.h"

#include <cmath>

#include "nn/init.h"
#include "ops/functions.h"

namespace remat::nn {

namespace {
// Checked before anything is allocated (empty() would fail first, with a less helpful message).
Shape weight_shape(int64_t in, int64_t out) {
  REMAT_CHECK(in > 0 && out > 0, "Linear: in_features and out_features must be positive (got ", in, ", ", out, ")");
  return {out, in};
}
}  // namespace

Linear::Linear(int64_t in, int64_t out, bool has_bias, Generator* generator, TensorOptions options)
    : Module("Linear"),
      weight(register_parameter("weight", empty(weight_shape(in, out), options.requires_grad(false)))),
      bias(register_parameter("bias", has_bias ? empty({out}, options.requires_grad(false)) : Tensor())),
      in_features(in),
      out_features(out) {
  init::kaiming_uniform_linear_(weight, generator);
  if (has_bias) {
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -bound, bound, generator);
  }
}

Tensor Linear::forward(const Tensor& x) const {
  auto s = enter();
  REMAT_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == in_features, "Linear: input's last dimension (",
              x.defined() && x.dim() >= 1 ? x.size(-1) : -1, ", shape ", x.defined() ? x.sizes() : Shape{},
              ") must equal in_features (", in_features, ")");
  return linear(x, weight, bias);
}

}  // namespace remat::nn
