// Mirrors c10/core/impl/TorchDispatchModeTLS.cpp and the Python-key fallback
// (torch/csrc/autograd/python_variable.cpp dispatch + PythonFallbackKernel.cpp).
#include "engine/dispatch/dispatch_mode.h"

#include "engine/dispatch/library.h"

namespace remat {

DispatchMode::~DispatchMode() = default;
bool DispatchMode::passes_through(const OperatorHandle&, const IValue*, size_t) { return false; }

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
// check cannot fail on the way back. The innermost mode's reference moves out of the stack and
// back (no reference-count update).
namespace {
__attribute__((always_inline)) inline std::shared_ptr<DispatchMode> take_innermost_mode() {
  std::vector<std::shared_ptr<DispatchMode>>& modes = tls_mode_stack;
  REMAT_CHECK(!modes.empty(), "DispatchModeTLS::pop: the dispatch mode stack is empty");
  std::shared_ptr<DispatchMode> mode(std::move(modes.back()));
  modes.pop_back();
  if (modes.empty()) {
    LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
    tls.included = tls.included.remove(DispatchKey::Python);
  }
  return mode;
}
__attribute__((always_inline)) inline void put_back_innermost_mode(std::shared_ptr<DispatchMode>&& mode) {
  tls_mode_stack.push_back(std::move(mode));
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  tls.included = tls.included.add(DispatchKey::Python);
}
// StashDispatchModeGuard, inlined into the fallbacks below (one per op under a mode).
struct InlineModeStash {
  std::shared_ptr<DispatchMode> mode;
  __attribute__((always_inline)) InlineModeStash() : mode(take_innermost_mode()) {}
  __attribute__((always_inline)) ~InlineModeStash() { put_back_innermost_mode(std::move(mode)); }
};
}  // namespace

StashDispatchModeGuard::StashDispatchModeGuard() : mode_(take_innermost_mode()) {}
StashDispatchModeGuard::~StashDispatchModeGuard() { put_back_innermost_mode(std::move(mode_)); }

DisableDispatchModesGuard::DisableDispatchModesGuard() : saved_(std::move(tls_mode_stack)) {
  tls_mode_stack.clear();
  sync_python_key();
}
DisableDispatchModesGuard::~DisableDispatchModesGuard() {
  tls_mode_stack = std::move(saved_);
  sync_python_key();
}

namespace {
[[noreturn]] __attribute__((noinline)) void report_return_count(const OperatorHandle& op, size_t got) {
  throw Error(detail::str("dispatch mode returned ", got, " values for ", op.name(), ", which returns ",
                          op.schema().returns().size()));
}

// A stack that holds more than the op's arguments below them (a boxed kernel above the Python key
// kept a value of its own there): the mode gets a copy of just the arguments.
__attribute__((noinline)) void mode_fallback_with_values_below(DispatchMode& mode, const OperatorHandle& op,
                                                              size_t nargs, Stack* stack) {
  std::vector<IValue> args(std::make_move_iterator(stack->end() - static_cast<std::ptrdiff_t>(nargs)),
                           std::make_move_iterator(stack->end()));
  stack->erase(stack->end() - static_cast<std::ptrdiff_t>(nargs), stack->end());
  std::vector<IValue> rets = mode.passes_through(op, args.data(), nargs) ? op.call(args) : mode.dispatch(op, args);
  if (rets.size() != op.schema().returns().size()) report_return_count(op, rets.size());
  for (IValue& r : rets) stack->push_back(std::move(r));
}

// The kernel at the Python key for every op: hand the call to the innermost mode. (Typed calls
// come to mode_fallback_typed below instead.)
void mode_fallback(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  InlineModeStash stash;
  const FunctionSchema& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  REMAT_INTERNAL_ASSERT(stack->size() >= nargs);
  if (__builtin_expect(stack->size() != nargs, 0)) {
    mode_fallback_with_values_below(*stash.mode, op, nargs, stack);
    return;
  }
  // The usual case (a boxed call): the stack holds exactly the arguments, so the mode reads them
  // in place, with no copy into a second vector.
  DispatchMode& mode = *stash.mode;
  // Let through: what dispatch()'s `return op.call(args);` would run.
  std::vector<IValue> rets = mode.passes_through(op, stack->data(), nargs) ? op.call(*stack) : mode.dispatch(op, *stack);
  if (__builtin_expect(rets.size() != schema.returns().size(), 0)) report_return_count(op, rets.size());
  stack->swap(rets);
  detail::give_stack(std::move(rets));  // the arguments are released here, as the copy's were
}

// The same for a typed call (every op with a C++ signature), whose arguments arrive boxed in place.
// Let through, it runs again with its C++ arguments straight into its own result: nothing more is
// boxed. Sent to dispatch(), its arguments go on a stack that op.call recognises, so a mode's
// `return op.call(args);` also reruns the typed call instead of unboxing args.
void mode_fallback_typed(const OperatorHandle& op, DispatchKeySet, const detail::ForwardedCall& call) {
  InlineModeStash stash;
  DispatchMode& mode = *stash.mode;
  if (mode.passes_through(op, call.args, call.nargs)) {
    call.rerun_into_result(call);
    return;
  }
  Stack stack = detail::take_stack(call.nargs);
  for (size_t i = 0; i < call.nargs; ++i) stack.push_back(std::move(call.args[i]));  // still borrowed
  struct Restore {
    const detail::ForwardedCall* prev;
    ~Restore() { detail::tls_forwarded_call = prev; }
  } restore{detail::tls_forwarded_call};
  call.stack = &stack;
  detail::tls_forwarded_call = &call;
  std::vector<IValue> rets = mode.dispatch(op, stack);
  if (__builtin_expect(rets.size() != op.schema().returns().size(), 0)) report_return_count(op, rets.size());
  call.set_result(call, rets);
  detail::give_stack(std::move(rets));
  detail::give_stack(std::move(stack));  // the arguments are released here
}
}  // namespace

REMAT_LIBRARY_IMPL(_, Python, m) {
  m.fallback(KernelFunction::makeForwardingFallback<&mode_fallback, &mode_fallback_typed>());
}

}  // namespace remat
