// Mirrors torch/nn/modules/module.py (nn.Module): a named tree of children and parameters.
//
// Each module knows its name under its parent; its forward runs inside remat::scope(name), so
// selective-checkpoint policies and traces see "layers.3.mlp.fc2" for the GPT's third block's
// second MLP layer, and named_parameters() yields "layers.3.mlp.fc2.weight".
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/scope.h"
#include "engine/core/generator.h"
#include "engine/core/tensor.h"

namespace remat::nn {

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The parameter (a leaf that requires grad) under `name`; an undefined value registers an
  // absent parameter (PyTorch's register_parameter(name, None)). The returned reference stays
  // valid for the module's life.
  Tensor& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  // A tensor that is part of the module's state but not trained (e.g. a causal mask).
  Tensor& register_buffer(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    module->name_ = name;
    children_.emplace_back(name, module);
    return module;
  }

  // "fc2.weight" style names, depth first in registration order.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  // Parameters and buffers: what save/load exchange.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  int64_t num_parameters() const;

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();  // sets every parameter's .grad to undefined (PyTorch's set_to_none=True)

  const std::string& name() const { return name_; }  // under its parent ("" at the root)
  const std::string& type_name() const { return type_name_; }
  // Moves every parameter and buffer (as a new leaf) to a device / dtype.
  void to(Device device);
  void to(ScalarType dtype);
  // Replaces every parameter and buffer by convert(it) (parameters stay leaves that require
  // grad; a tensor shared by several modules is converted once and stays shared).
  void for_each_tensor(const std::function<Tensor(const Tensor&)>& convert);

 protected:
  // What enter() returns: the module's scope, and the "forward" phase for the memory tracker
  // unless a phase is set already (a rerun during backward stays "recompute").
  struct ForwardScope {
    explicit ForwardScope(const std::string& name) : scope(name), phase(MemoryPhase::Forward) {}
    remat::scope scope;
    DefaultMemoryPhaseGuard phase;
  };
  // Opens this module's scope for its forward: `auto s = enter();`
  std::unique_ptr<ForwardScope> enter() const { return std::make_unique<ForwardScope>(name_); }

 private:
  void collect(const std::string& prefix, bool recurse, bool buffers,
               std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_parameters(bool recurse, std::vector<Tensor>& out) const;  // collect's tensors, no names

  std::string type_name_;
  std::string name_;
  bool training_ = true;
  // deques: references handed out by register_* stay valid as more are added
  std::deque<std::pair<std::string, Tensor>> parameters_;
  std::deque<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace remat::nn
