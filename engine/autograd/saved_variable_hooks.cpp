// Mirrors ATen/SavedTensorHooks.cpp and torch/csrc/autograd/python_saved_variable_hooks.cpp.
#include "engine/autograd/saved_variable_hooks.h"

#include "engine/core/error.h"

namespace remat::autograd {

namespace {
struct HooksState {
  std::vector<std::shared_ptr<SavedTensorHooks>> stack;
  std::optional<std::string> disabled_error_message;
};
thread_local HooksState tls_hooks;
thread_local const std::string* tls_saving_node = nullptr;
const std::string kNoNode;
}  // namespace

const std::string& current_saving_node() { return tls_saving_node ? *tls_saving_node : kNoNode; }
SavingForNodeGuard::SavingForNodeGuard(const std::string* node_name) : previous_(tls_saving_node) {
  tls_saving_node = node_name;
}
SavingForNodeGuard::~SavingForNodeGuard() { tls_saving_node = previous_; }

void SavedTensorDefaultHooks::push(PackHook pack, UnpackHook unpack) {
  if (tls_hooks.disabled_error_message) throw Error(*tls_hooks.disabled_error_message);
  REMAT_CHECK(pack && unpack, "saved_tensors_hooks: both a pack and an unpack hook are required");
  tls_hooks.stack.push_back(std::make_shared<SavedTensorHooks>(SavedTensorHooks{std::move(pack), std::move(unpack)}));
}

void SavedTensorDefaultHooks::pop() {
  REMAT_CHECK(!tls_hooks.stack.empty(), "saved_tensors_hooks: pop with an empty hooks stack");
  tls_hooks.stack.pop_back();
}

std::shared_ptr<SavedTensorHooks> SavedTensorDefaultHooks::top() {
  return tls_hooks.stack.empty() ? nullptr : tls_hooks.stack.back();
}

bool SavedTensorDefaultHooks::is_enabled() { return !tls_hooks.stack.empty(); }

std::optional<std::string> SavedTensorDefaultHooks::disabled_error_message() {
  return tls_hooks.disabled_error_message;
}
void SavedTensorDefaultHooks::set_disabled_error_message(std::optional<std::string> message) {
  tls_hooks.disabled_error_message = std::move(message);
}

std::vector<std::shared_ptr<SavedTensorHooks>> SavedTensorDefaultHooks::get_stack() { return tls_hooks.stack; }
void SavedTensorDefaultHooks::set_stack(std::vector<std::shared_ptr<SavedTensorHooks>> stack) {
  tls_hooks.stack = std::move(stack);
}

saved_tensors_hooks::saved_tensors_hooks(PackHook pack, UnpackHook unpack) {
  SavedTensorDefaultHooks::push(std::move(pack), std::move(unpack));
}
saved_tensors_hooks::~saved_tensors_hooks() { SavedTensorDefaultHooks::pop(); }

disable_saved_tensors_hooks::disable_saved_tensors_hooks(std::string error_message)
    : previous_(SavedTensorDefaultHooks::disabled_error_message()) {
  SavedTensorDefaultHooks::set_disabled_error_message(std::move(error_message));
}
disable_saved_tensors_hooks::~disable_saved_tensors_hooks() {
  SavedTensorDefaultHooks::set_disabled_error_message(previous_);
}

}  // namespace remat::autograd
