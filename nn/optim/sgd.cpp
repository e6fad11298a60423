// Mirrors torch/optim/sgd.py (_single_tensor_sgd).
#include "nn/optim/sgd.h"

#include "engine/autograd/grad_mode.h"
#include "ops/functions.h"

namespace remat::optim {

SGD::SGD(const std::vector<OptimizerParamGroup>& param_groups, SGDOptions defaults)
    : Optimizer("SGD", std::make_unique<SGDOptions>(defaults)) {
  validate(defaults);
  size_t n = 0;
  for (const OptimizerParamGroup& g : param_groups) n += g.params().size();
  REMAT_CHECK(n > 0, "SGD: optimizer got an empty parameter list");
  for (const OptimizerParamGroup& g : param_groups) add_param_group(g);
}

SGD::SGD(std::vector<Tensor> params, SGDOptions defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

void SGD::validate(const OptimizerOptions& options) const {
  const auto& o = static_cast<const SGDOptions&>(options);
  REMAT_CHECK(o.lr() >= 0.0, "SGD: Invalid learning rate: ", o.lr());
  REMAT_CHECK(o.momentum() >= 0.0, "SGD: Invalid momentum value: ", o.momentum());
  REMAT_CHECK(o.weight_decay() >= 0.0, "SGD: Invalid weight_decay value: ", o.weight_decay());
  REMAT_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0),
              "SGD: Nesterov momentum requires a momentum and zero dampening (momentum ", o.momentum(),
              ", dampening ", o.dampening(), ")");
}

Tensor SGD::momentum_buffer(const Tensor& p) const {
  auto it = momentum_buffers_.find(p.unsafeGetTensorImpl());
  return it == momentum_buffers_.end() ? Tensor() : it->second;
}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  MemoryPhaseGuard phase(MemoryPhase::Optimizer);
  for (OptimizerParamGroup& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    for (Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = neg(grad);
      if (o.weight_decay() != 0) grad = add(grad, mul(p, o.weight_decay()));
      if (o.momentum() != 0) {
        Tensor& buf = momentum_buffers_[p.unsafeGetTensorImpl()];
        if (!buf.defined()) {
          MemoryCategoryGuard state(MemoryCategory::OptimizerState);
          buf = clone(grad).detach();
        } else {
          mul_(buf, o.momentum());
          add_(buf, o.dampening() == 0 ? grad : mul(grad, 1.0 - o.dampening()));
        }
        grad = o.nesterov() ? add(grad, mul(buf, o.momentum())) : buf;
      }
      add_(p, mul(grad, -o.lr()));
    }
  }
}

}  // namespace remat::optim
