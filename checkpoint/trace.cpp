// The checkpoint trace (see trace.h).
#include "checkpoint/trace.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace remat {

namespace {
struct TraceState {
  bool enabled = [] {
    const char* env = std::getenv("REMAT_TRACE");
    return env != nullptr && std::strcmp(env, "0") != 0 && std::strcmp(env, "") != 0;
  }();
  TraceSink sink;
  std::mutex mutex;
};
TraceState& state() {
  static TraceState* s = new TraceState();
  return *s;
}
}  // namespace

void set_checkpoint_trace(bool enabled) { state().enabled = enabled; }
bool checkpoint_trace_enabled() { return state().enabled; }

TraceSink set_checkpoint_trace_sink(TraceSink sink) {
  std::lock_guard<std::mutex> g(state().mutex);
  TraceSink previous = std::move(state().sink);
  state().sink = std::move(sink);
  return previous;
}

void trace::emit(const std::string& line) {
  TraceState& s = state();
  if (!s.enabled) return;
  std::lock_guard<std::mutex> g(s.mutex);
  if (s.sink) {
    s.sink(line);
  } else {
    std::cerr << "[remat] " << line << "\n";
  }
}

}  // namespace remat
