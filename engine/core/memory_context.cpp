// The thread-local memory context (see memory_context.h).
#include "engine/core/memory_context.h"

namespace remat {

namespace detail {
thread_local const std::string* tls_current_op = nullptr;
}

namespace {
thread_local MemoryPhase tls_phase = MemoryPhase::Other;
thread_local int8_t tls_category = -1;  // -1: no MemoryCategoryGuard
const std::string kNoOp;
}  // namespace

const char* toString(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::Parameter: return "parameter";
    case MemoryCategory::Buffer: return "buffer";
    case MemoryCategory::OptimizerState: return "optimizer_state";
    case MemoryCategory::Gradient: return "gradient";
    case MemoryCategory::Activation: return "activation";
    case MemoryCategory::Temporary: return "temporary";
    case MemoryCategory::Other: return "other";
    case MemoryCategory::Offloaded: return "offloaded";
  }
  return "unknown";
}

const char* toString(MemoryPhase p) {
  switch (p) {
    case MemoryPhase::Other: return "other";
    case MemoryPhase::Forward: return "forward";
    case MemoryPhase::Backward: return "backward";
    case MemoryPhase::Recompute: return "recompute";
    case MemoryPhase::Optimizer: return "optimizer";
  }
  return "unknown";
}

MemoryPhase current_memory_phase() { return tls_phase; }

MemoryCategory current_memory_category() {
  if (tls_category >= 0) return static_cast<MemoryCategory>(tls_category);
  return tls_phase == MemoryPhase::Other ? MemoryCategory::Other : MemoryCategory::Temporary;
}

const std::string& current_memory_op() { return detail::tls_current_op != nullptr ? *detail::tls_current_op : kNoOp; }

MemoryPhaseGuard::MemoryPhaseGuard(MemoryPhase phase) : prev_(tls_phase) { tls_phase = phase; }
MemoryPhaseGuard::~MemoryPhaseGuard() { tls_phase = prev_; }

DefaultMemoryPhaseGuard::DefaultMemoryPhaseGuard(MemoryPhase phase) : prev_(tls_phase) {
  if (tls_phase == MemoryPhase::Other) tls_phase = phase;
}
DefaultMemoryPhaseGuard::~DefaultMemoryPhaseGuard() { tls_phase = prev_; }

MemoryCategoryGuard::MemoryCategoryGuard(MemoryCategory category) : prev_(tls_category) {
  tls_category = static_cast<int8_t>(category);
}
MemoryCategoryGuard::~MemoryCategoryGuard() { tls_category = prev_; }

}  // namespace remat
