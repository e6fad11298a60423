// Mirrors c10/core/impl/TorchDispatchModeTLS.cpp and the Python-key fallback
// (torch/csrc/autograd/python_variable.cpp dispatch + PythonFallbackKernel.cpp).
#include "engine/dispatch/dispatch_mode.h"

#include "engine/dispatch/library.h"

namespace remat {

DispatchMode::~DispatchMode() = default;

namespace {
thread_local std::vector<std::shared_ptr<DispatchMode>> tls_mode_stack;

void sync_python_key() {
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  tls.included = tls_mode_stack.empty() ? tls.included.remove(DispatchKey::Python)
                                        : tls.included.add(DispatchKey::Python);
}
}  // namespace

void DispatchModeTLS::push(std::shared_ptr<DispatchMode> mode) {
  REMAT_CHECK(mode != nullptr, "DispatchModeGuard: cannot push a null dispatch mode");
  tls_mode_stack.push_back(std::move(mode));
  sync_python_key();
}

std::shared_ptr<DispatchMode> DispatchModeTLS::pop() {
  REMAT_CHECK(!tls_mode_stack.empty(), "DispatchModeTLS::pop: the dispatch mode stack is empty");
  auto mode = std::move(tls_mode_stack.back());
  tls_mode_stack.pop_back();
  sync_python_key();
  return mode;
}

size_t DispatchModeTLS::size() { return tls_mode_stack.size(); }
const std::vector<std::shared_ptr<DispatchMode>>& DispatchModeTLS::stack() { return tls_mode_stack; }

DispatchModeGuard::DispatchModeGuard(std::shared_ptr<DispatchMode> mode) : mode_(mode) {
  REMAT_CHECK(mode_ != nullptr, "DispatchModeGuard: cannot push a null dispatch mode");
  mode_->enter();
  DispatchModeTLS::push(std::move(mode));
}
DispatchModeGuard::~DispatchModeGuard() {
  // Guards nest, so this is normally the innermost mode; remove the last occurrence either way.
  for (size_t i = tls_mode_stack.size(); i-- > 0;) {
    if (tls_mode_stack[i] == mode_) {
      tls_mode_stack.erase(tls_mode_stack.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  sync_python_key();
  mode_->exit();
}

// Runs on every op under a mode, so both directions are done directly: the Python key is in the
// included set only because the stack is non-empty, and mode_ was on it, so push()'s null
// check cannot fail on the way back.
StashDispatchModeGuard::StashDispatchModeGuard() {
  REMAT_CHECK(!tls_mode_stack.empty(), "DispatchModeTLS::pop: the dispatch mode stack is empty");
  mode_ = std::move(tls_mode_stack.back());
  tls_mode_stack.pop_back();
  if (tls_mode_stack.empty()) {
    LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
    tls.included = tls.included.remove(DispatchKey::Python);
  }
}
StashDispatchModeGuard::~StashDispatchModeGuard() {
  tls_mode_stack.push_back(std::move(mode_));
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  tls.included = tls.included.add(DispatchKey::Python);
}

DisableDispatchModesGuard::DisableDispatchModesGuard() : saved_(std::move(tls_mode_stack)) {
  tls_mode_stack.clear();
  sync_python_key();
}
DisableDispatchModesGuard::~DisableDispatchModesGuard() {
  tls_mode_stack = std::move(saved_);
  sync_python_key();
}

namespace {
// The kernel at the Python key for every op: hand the call to the innermost mode.
void mode_fallback(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  StashDispatchModeGuard stash;
  const FunctionSchema& schema = op.schema();
  size_t nargs = schema.arguments().size();
  REMAT_INTERNAL_ASSERT(stack->size() >= nargs);
  std::vector<IValue> rets;
  const bool in_place = stack->size() == nargs;
  if (in_place) {
    // The usual case (a typed call boxed for this key, or a boxed op.call): the stack holds
    // exactly the arguments, so the mode reads them in place, with no copy into a second vector.
    rets = stash.mode()->dispatch(op, *stack);
  } else {
    std::vector<IValue> args(std::make_move_iterator(stack->end() - static_cast<std::ptrdiff_t>(nargs)),
                             std::make_move_iterator(stack->end()));
    stack->erase(stack->end() - static_cast<std::ptrdiff_t>(nargs), stack->end());
    rets = stash.mode()->dispatch(op, args);
  }
  REMAT_CHECK(rets.size() == schema.returns().size(), "dispatch mode returned ", rets.size(),
              " values for ", op.name(), ", which returns ", schema.returns().size());
  if (in_place) {
    stack->swap(rets);
    detail::give_stack(std::move(rets));  // the arguments are released here, as the copy's were
  } else {
    for (IValue& r : rets) stack->push_back(std::move(r));
  }
}
}  // namespace

// Forwarding: a mode's op.call(args) on the arguments it was handed reruns the typed call.
REMAT_LIBRARY_IMPL(_, Python, m) { m.fallback(KernelFunction::makeForwardingFallback<&mode_fallback>()); }

}  // namespace remat
