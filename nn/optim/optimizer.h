// Mirrors torch/csrc/api/include/torch/optim/optimizer.h (OptimizerOptions, OptimizerParamGroup,
// Optimizer) and torch/optim/optimizer.py (param groups, zero_grad(set_to_none=True)).
//
//   optim::AdamW opt(model.parameters(), optim::AdamWOptions(3e-4).weight_decay(0.1));
//   for (...) { opt.zero_grad(); model.forward(x, y).loss.backward(); opt.step(); }
//
// Each param group holds its parameters and a full copy of the options (PyTorch's group dict):
// a group built without options takes the optimizer's defaults. Per-parameter state (momentum
// buffers, Adam moments) is keyed by the parameter's TensorImpl, as in PyTorch's C++ API; a
// parameter replaced by Module::to() is a new tensor, so build the optimizer after moving.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

// REMAT_ARG(T, name) = default;  declares a field `name_` with a chainable setter `name(v)` and a
// getter `name()` (PyTorch's TORCH_ARG): SGDOptions(0.1).momentum(0.9).nesterov(true).
#define REMAT_ARG(T, name)                               \
 public:                                                 \
  auto name(const T& new_##name)->decltype(*this) {      \
    this->name##_ = new_##name;                          \
    return *this;                                        \
  }                                                      \
  const T& name() const noexcept { return this->name##_; } \
  T& name() noexcept { return this->name##_; }           \
                                                         \
 private:                                                \
  T name##_

namespace remat::optim {

// Hyperparameters of one param group. Each optimizer's options derive from this.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
};

// Parameters that share hyperparameters (torch.optim's param_groups entry).
class OptimizerParamGroup {
 public:
  // Without options: the optimizer fills in its defaults.
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT: implicit, as PyTorch
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (parameters without one are skipped).
  virtual void step() = 0;

  // set_to_none (the default, as in PyTorch 2): drops each .grad; otherwise zeroes it in place.
  void zero_grad(bool set_to_none = true);

  // Adds a group; a group without options gets a copy of the defaults. Throws for an empty
  // group, a non-leaf parameter, or a parameter that is already in some group.
  void add_param_group(const OptimizerParamGroup& group);
  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // Every parameter of every group, in order.
  std::vector<Tensor> parameters() const;

 protected:
  // `name` prefixes error messages ("SGD", "AdamW"); subclasses call add_param_group for each
  // group in their constructor (after validating the defaults).
  Optimizer(std::string name, std::unique_ptr<OptimizerOptions> defaults)
      : name_(std::move(name)), defaults_(std::move(defaults)) {}
  // Checks a group's hyperparameters (throws with PyTorch's "Invalid ..." messages).
  virtual void validate(const OptimizerOptions& options) const = 0;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> param_groups_;
};

}  // namespace remat::optim
