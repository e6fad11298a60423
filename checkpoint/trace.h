// remat's checkpoint trace (no PyTorch counterpart; PyTorch's closest is debug=True's op log).
//
// One line per event in a checkpointed region's life: the region starting, every pack and
// unpack, recomputation start/stop (and why it stopped), every selective-checkpoint policy
// decision (scope, op, index) and cache hit. Enabled by set_checkpoint_trace(true) or the
// environment variable REMAT_TRACE=1; lines go to stderr unless a sink is set.
#pragma once

#include <functional>
#include <string>

namespace remat {

void set_checkpoint_trace(bool enabled);
bool checkpoint_trace_enabled();
// Where trace lines go (nullptr: stderr). Returns the previous sink.
using TraceSink = std::function<void(const std::string& line)>;
TraceSink set_checkpoint_trace_sink(TraceSink sink);

namespace trace {
// Emits "[remat] <line>" if tracing is on.
void emit(const std::string& line);
}  // namespace trace

}  // namespace remat
