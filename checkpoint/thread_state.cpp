// The thread-state snapshot (see thread_state.h).
#include "checkpoint/thread_state.h"

#include <sstream>

#include "engine/autograd/grad_mode.h"
#include "engine/core/scope_path.h"

namespace remat {

ThreadStateSnapshot::ThreadStateSnapshot()
    : modes_(DispatchModeTLS::stack()),
      keys_(tls_local_dispatch_key_set()),
      grad_enabled_(autograd::GradMode::is_enabled()),
      saved_tensor_hooks_(autograd::SavedTensorDefaultHooks::get_stack()),
      scope_(scope_path_names()) {}

void ThreadStateSnapshot::restore() const {
  if (DispatchModeTLS::stack() != modes_) {
    while (DispatchModeTLS::size() > 0) DispatchModeTLS::pop();
    for (const auto& m : modes_) DispatchModeTLS::push(m);
  }
  tls_local_dispatch_key_set() = keys_;  // after the modes: push/pop set the Python key
  autograd::GradMode::set_enabled(grad_enabled_);
  if (autograd::SavedTensorDefaultHooks::get_stack() != saved_tensor_hooks_)
    autograd::SavedTensorDefaultHooks::set_stack(saved_tensor_hooks_);
  if (scope_path_names() != scope_) set_scope_path_names(scope_);
}

std::string ThreadStateSnapshot::differences() const {
  std::ostringstream os;
  auto part = [&](const std::string& s) { os << (os.tellp() > 0 ? ", " : "") << s; };
  if (DispatchModeTLS::stack() != modes_)
    part("dispatch modes (" + std::to_string(DispatchModeTLS::size()) + ", was " + std::to_string(modes_.size()) + ")");
  const LocalDispatchKeySet& k = tls_local_dispatch_key_set();
  if (!(k.included == keys_.included) || !(k.excluded == keys_.excluded)) part("dispatch keys");
  if (autograd::GradMode::is_enabled() != grad_enabled_)
    part(std::string("grad mode (") + (grad_enabled_ ? "off, was on" : "on, was off") + ")");
  if (autograd::SavedTensorDefaultHooks::get_stack() != saved_tensor_hooks_) part("saved-tensor hooks");
  if (scope_path_names() != scope_) part("scope path ('" + scope_path() + "')");
  return os.str();
}

}  // namespace remat
