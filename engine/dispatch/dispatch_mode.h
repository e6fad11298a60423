// Mirrors torch/utils/_python_dispatch.py (TorchDispatchMode), c10/core/impl/TorchDispatchModeTLS
// and the Python-key fallback in torch/csrc/utils/python_dispatch.cpp / PythonFallbackKernel.cpp.
//
// A dispatch mode intercepts every op call below autograd:
//
//   struct Counter : DispatchMode {
//     std::map<std::string, int> calls;
//     std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
//       ++calls[op.name()];
//       return op.call(args);   // runs the op with this mode stashed: outer modes still apply
//     }
//   };
//   DispatchModeGuard g(std::make_shared<Counter>());
//
// A mode that only looks at most calls can say so in passes_through(), which sees each op first;
// the calls it lets through then skip the boxed returns:
//
//   bool passes_through(const OperatorHandle& op, const IValue*, size_t) override {
//     ++calls[op.name()];
//     return true;
//   }
#pragma once

#include <memory>
#include <vector>

#include "engine/dispatch/dispatcher.h"

namespace remat {

class DispatchMode : public std::enable_shared_from_this<DispatchMode> {
 public:
  virtual ~DispatchMode();
  // Called for every op while this mode is the innermost one. Return the op's returns.
  virtual std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) = 0;
  // Optional fast path (no PyTorch counterpart: a Python mode pays for boxing either way). Called
  // for every op before dispatch(), with this mode stashed as for dispatch() and the n arguments
  // borrowed (what it keeps, it copies). Return true to let the call through unchanged: it runs
  // exactly as `return op.call(args);` in dispatch() would run it (outer modes still apply), but
  // a typed call's returns are never boxed, and dispatch() is not called for it. The default,
  // false, sends every op to dispatch().
  virtual bool passes_through(const OperatorHandle& op, const IValue* args, size_t n);
  // Called when a DispatchModeGuard pushes / pops this mode (Python's __enter__ / __exit__;
  // not when the dispatcher stashes it while it runs).
  virtual void enter() {}
  virtual void exit() {}
};

// The thread's stack of modes (innermost last). The Python key is in the thread's included
// key set exactly while the stack is non-empty.
class DispatchModeTLS {
 public:
  static void push(std::shared_ptr<DispatchMode> mode);
  static std::shared_ptr<DispatchMode> pop();
  static size_t size();
  static const std::vector<std::shared_ptr<DispatchMode>>& stack();
};

// `with mode:`: pushes on construction, pops on destruction.
class DispatchModeGuard {
 public:
  explicit DispatchModeGuard(std::shared_ptr<DispatchMode> mode);
  ~DispatchModeGuard();
  DispatchModeGuard(const DispatchModeGuard&) = delete;
  DispatchModeGuard& operator=(const DispatchModeGuard&) = delete;

 private:
  std::shared_ptr<DispatchMode> mode_;
};

// Pops the innermost mode for the guard's lifetime and pushes it back after, so that a mode's
// own op calls go to the next mode out (or the backend).
class StashDispatchModeGuard {
 public:
  StashDispatchModeGuard();
  ~StashDispatchModeGuard();
  const std::shared_ptr<DispatchMode>& mode() const { return mode_; }
  StashDispatchModeGuard(const StashDispatchModeGuard&) = delete;
  StashDispatchModeGuard& operator=(const StashDispatchModeGuard&) = delete;

 private:
  std::shared_ptr<DispatchMode> mode_;
};

// Runs with no dispatch modes at all (the stack is set aside and restored), like
// torch.utils._python_dispatch._disable_current_modes.
class DisableDispatchModesGuard {
 public:
  DisableDispatchModesGuard();
  ~DisableDispatchModesGuard();
  DisableDispatchModesGuard(const DisableDispatchModesGuard&) = delete;
  DisableDispatchModesGuard& operator=(const DisableDispatchModesGuard&) = delete;

 private:
  std::vector<std::shared_ptr<DispatchMode>> saved_;
};

}  // namespace remat
