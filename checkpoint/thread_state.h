// What a dry run must leave as it found it when the step it runs throws (no PyTorch counterpart:
// torch.utils.checkpoint and FakeTensorMode rely on `with` blocks unwinding). A snapshot of the
// calling thread's engine state: the dispatch-mode stack and the dispatch keys, grad mode, the
// saved-tensor hooks stack and the scope path. restore() puts all of it back, whatever a step
// that threw midway (or left a mode pushed without a guard) changed.
//
//   ThreadStateSnapshot before;
//   try { step(); } catch (...) { before.restore(); throw; }
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/saved_variable_hooks.h"
#include "engine/dispatch/dispatch_mode.h"
#include "engine/dispatch/local_dispatch_key_set.h"

namespace remat {

class ThreadStateSnapshot {
 public:
  ThreadStateSnapshot();  // takes the snapshot
  void restore() const;
  // The parts that differ from now, named ("dispatch modes (2, was 1), grad mode (off, was on)"); "" if none.
  std::string differences() const;

 private:
  std::vector<std::shared_ptr<DispatchMode>> modes_;
  LocalDispatchKeySet keys_;
  bool grad_enabled_;
  std::vector<std::shared_ptr<autograd::SavedTensorHooks>> saved_tensor_hooks_;
  std::vector<std::string> scope_;
};

}  // namespace remat
