// Mirrors torch/csrc/api/src/optim/optimizer.cpp and torch/optim/optimizer.py.
#include "nn/optim/optimizer.h"

#include "engine/autograd/grad_mode.h"
#include "ops/functions.h"

namespace remat::optim {

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  REMAT_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options yet (add it to an optimizer)");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  REMAT_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options yet (add it to an optimizer)");
  return *options_;
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  OptimizerParamGroup g(group);
  if (!g.has_options()) g.set_options(defaults_->clone());
  validate(g.options());
  for (size_t i = 0; i < g.params().size(); ++i) {
    const Tensor& p = g.params()[i];
    REMAT_CHECK(p.defined(), name_, ": parameter ", i, " of the group is an undefined tensor");
    REMAT_CHECK(p.is_leaf(), name_, ": can't optimize a non-leaf Tensor (parameter ", i, ", shape ", p.sizes(), ")");
    for (size_t j = 0; j < i; ++j)
      REMAT_CHECK(!g.params()[j].is_same(p), name_, ": optimizer contains a parameter group with duplicate parameters "
                  "(parameters ", j, " and ", i, ")");
    for (const OptimizerParamGroup& other : param_groups_)
      for (const Tensor& q : other.params())
        REMAT_CHECK(!q.is_same(p), name_, ": some parameters appear in more than one parameter group (shape ",
                    p.sizes(), ")");
  }
  param_groups_.push_back(std::move(g));
}

void Optimizer::zero_grad(bool set_to_none) {
  autograd::NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups_) {
    for (Tensor& p : group.params()) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        zero_(g);
      }
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const OptimizerParamGroup& group : param_groups_)
    for (const Tensor& p : group.params()) out.push_back(p);
  return out;
}

}  // namespace remat::optim
