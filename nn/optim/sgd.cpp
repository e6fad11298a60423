// Mirrors torch/optim/sgd.py (_single_tensor_sgd; _fused_sgd with fused).
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

bool SGD::fused_step(const SGDOptions& o, Tensor& p) {
  // _fused_sgd_ has CPU and CUDA kernels: elsewhere the op sequence runs, and so does a dry run
  // that counts like such a device (it must make the same allocations).
  const DeviceType where = p.device().is_meta() ? meta_accounting() : p.device().type;
  if ((where != kCPU && where != kCUDA) || !p.is_contiguous() ||
      !(p.dtype() == kFloat || p.dtype() == kDouble || p.dtype() == kBFloat16))
    return false;
  Tensor buf = o.momentum() != 0 ? momentum_buffer(p) : Tensor();  // None without momentum
  if (buf.defined() && !buf.is_contiguous()) return false;  // e.g. cloned from a strided gradient
  const bool first = o.momentum() != 0 && !buf.defined();
  if (first) {
    // As _fused_sgd: an uninitialised buffer that the first step writes (buf = d).
    MemoryCategoryGuard state(MemoryCategory::OptimizerState);
    buf = empty_like(p);
  }
  _fused_sgd_(p, p.grad(), buf, o.weight_decay(), o.momentum(), o.lr(), o.dampening(), o.nesterov(), o.maximize(),
              first);
  if (first) momentum_buffers_[p.unsafeGetTensorImpl()] = buf;  // kept only once written
  return true;
}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  MemoryPhaseGuard phase(MemoryPhase::Optimizer);
  for (OptimizerParamGroup& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    for (Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.fused() && fused_step(o, p)) continue;
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
