// Mirrors torch/csrc/autograd/saved_variable_hooks.h, ATen/SavedTensorHooks.h and
// torch.autograd.graph.saved_tensors_hooks / disable_saved_tensors_hooks.
//
// A thread-local stack of (pack, unpack) pairs. When autograd saves a tensor for backward, the
// innermost pair's pack hook runs (under no-grad, once per save) and its result is stored
// instead of the tensor; unpack turns it back into a tensor each time backward reads it.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace remat::autograd {

using PackHook = std::function<std::any(const Tensor&)>;
using UnpackHook = std::function<Tensor(const std::any&)>;

struct SavedTensorHooks {
  PackHook pack;
  UnpackHook unpack;
};

struct SavedTensorDefaultHooks {
  static void push(PackHook pack, UnpackHook unpack);
  static void pop();
  // The innermost pair, or nullptr when the stack is empty.
  static std::shared_ptr<SavedTensorHooks> top();
  static bool is_enabled();  // some pair is on the stack
  // While disabled, push() throws the message.
  static std::optional<std::string> disabled_error_message();
  static void set_disabled_error_message(std::optional<std::string> message);
  // The whole thread-local stack (saved and restored by code that must run without hooks).
  static std::vector<std::shared_ptr<SavedTensorHooks>> get_stack();
  static void set_stack(std::vector<std::shared_ptr<SavedTensorHooks>> stack);
};

// The name of the node whose tensors are being saved right now ("MmBackward0"), so that a
// pack hook can say what it packs (checkpoint traces); empty outside a save.
const std::string& current_saving_node();
class SavingForNodeGuard {
 public:
  explicit SavingForNodeGuard(const std::string* node_name);
  ~SavingForNodeGuard();
  SavingForNodeGuard(const SavingForNodeGuard&) = delete;
  SavingForNodeGuard& operator=(const SavingForNodeGuard&) = delete;

 private:
  const std::string* previous_;
};

// RAII: `with torch.autograd.graph.saved_tensors_hooks(pack, unpack):`
class saved_tensors_hooks {
 public:
  saved_tensors_hooks(PackHook pack, UnpackHook unpack);
  ~saved_tensors_hooks();
  saved_tensors_hooks(const saved_tensors_hooks&) = delete;
  saved_tensors_hooks& operator=(const saved_tensors_hooks&) = delete;
};

// RAII: any saved_tensors_hooks pushed while this is alive throws `error_message`.
class disable_saved_tensors_hooks {
 public:
  explicit disable_saved_tensors_hooks(std::string error_message);
  ~disable_saved_tensors_hooks();
  disable_saved_tensors_hooks(const disable_saved_tensors_hooks&) = delete;
  disable_saved_tensors_hooks& operator=(const disable_saved_tensors_hooks&) = delete;

 private:
  std::optional<std::string> previous_;
};

}  // namespace remat::autograd
