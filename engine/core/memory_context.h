// Mirrors the state torch/distributed/_tools/mem_tracker.py (MemTracker) keeps while it runs: what
// a byte is (_MemRefType: PARAM, BUFFER, GRAD, OPT, ACT, TEMP), in which phase of a step it was
// allocated, and under which op (record_function's name). Layers above the engine push these
// with the RAII guards below; the engine itself knows no op and no module:
//
//   nn::Module registers a parameter        -> claim_memory(p, MemoryCategory::Parameter)
//   an optimizer creates its moments        -> MemoryCategoryGuard g(MemoryCategory::OptimizerState)
//   autograd's engine runs backward         -> MemoryPhaseGuard g(MemoryPhase::Backward)
//   AccumulateGrad keeps a gradient         -> claim_memory(grad, MemoryCategory::Gradient)
//   a SavedVariable keeps a tensor          -> claim_memory(t, MemoryCategory::Activation)
//   checkpointing reruns a region           -> MemoryPhaseGuard g(MemoryPhase::Recompute)
//   the dispatcher runs an op               -> CurrentOpGuard g(&op.name())
#pragma once

#include <cstdint>
#include <string>

namespace remat {

// What a byte is. The order is also the priority of claim_memory: a storage is re-labelled only
// by a category listed before its own (a parameter that is saved for backward stays a parameter;
// a temporary that AccumulateGrad keeps becomes a gradient).
// Offloaded: pinned host memory holding a tensor that selective checkpointing moved off a CUDA
// device (CheckpointPolicy::MUST_CPU_OFFLOAD); such storages are on Device{kCPU} and are
// allocated under MemoryCategoryGuard(Offloaded), so nothing re-labels them. Last, so that the
// numbers of the other categories are those they always had.
enum class MemoryCategory : int8_t { Parameter, Buffer, OptimizerState, Gradient, Activation, Temporary, Other, Offloaded };
constexpr int kNumMemoryCategories = 8;
const char* toString(MemoryCategory c);

enum class MemoryPhase : int8_t { Other, Forward, Backward, Recompute, Optimizer };
const char* toString(MemoryPhase p);  // "other", "forward", "backward", "recompute", "optimizer"

// The thread's current phase, category override and op.
MemoryPhase current_memory_phase();
// The category of a storage allocated now: the innermost MemoryCategoryGuard's, else Temporary
// inside a phase, else Other.
MemoryCategory current_memory_category();
// The op the dispatcher is running on this thread ("" outside ops).
const std::string& current_memory_op();

class MemoryPhaseGuard {
 public:
  explicit MemoryPhaseGuard(MemoryPhase phase);
  ~MemoryPhaseGuard();
  MemoryPhaseGuard(const MemoryPhaseGuard&) = delete;
  MemoryPhaseGuard& operator=(const MemoryPhaseGuard&) = delete;

 private:
  MemoryPhase prev_;
};

// Sets the phase only where none is set yet (an nn::Module's forward inside backward's
// recompute stays "recompute").
class DefaultMemoryPhaseGuard {
 public:
  explicit DefaultMemoryPhaseGuard(MemoryPhase phase);
  ~DefaultMemoryPhaseGuard();
  DefaultMemoryPhaseGuard(const DefaultMemoryPhaseGuard&) = delete;
  DefaultMemoryPhaseGuard& operator=(const DefaultMemoryPhaseGuard&) = delete;

 private:
  MemoryPhase prev_;
};

class MemoryCategoryGuard {
 public:
  explicit MemoryCategoryGuard(MemoryCategory category);
  ~MemoryCategoryGuard();
  MemoryCategoryGuard(const MemoryCategoryGuard&) = delete;
  MemoryCategoryGuard& operator=(const MemoryCategoryGuard&) = delete;

 private:
  int8_t prev_;
};

namespace detail {
extern thread_local const std::string* tls_current_op;
}

// Set by the dispatcher around each op call (two thread-local stores: it is on every call).
class CurrentOpGuard {
 public:
  explicit CurrentOpGuard(const std::string* op) : prev_(detail::tls_current_op) { detail::tls_current_op = op; }
  ~CurrentOpGuard() { detail::tls_current_op = prev_; }
  CurrentOpGuard(const CurrentOpGuard&) = delete;
  CurrentOpGuard& operator=(const CurrentOpGuard&) = delete;

 private:
  const std::string* prev_;
};

}  // namespace remat
