// The emulated device's streams and events: see streams.h.
//
// One mutex guards every queue; each worker waits on one condition variable, signalled whenever
// any stream makes progress (work may wait for another stream's position). The objects are never
// freed: handles stay valid for the process's life, and work queued during static teardown
// finds them alive.
#include "engine/cuda/emu/streams.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/cuda/emu/device_memory.h"

namespace remat::cuda_emu {

namespace {

struct Item {
  Work work;
  std::vector<std::pair<Stream*, uint64_t>> after;  // run only once each stream reached that
};

}  // namespace

struct Stream {
  int device = 0;
  bool legacy = false;    // the device's legacy default stream
  bool blocking = true;   // synchronises with the legacy default stream (no cudaStreamNonBlocking)
  bool destroyed = false;
  uint64_t queued = 0;    // items ever queued
  uint64_t done = 0;      // items run
  std::deque<Item> items;
};

struct EventState {
  bool timing = true;
  Stream* stream = nullptr;  // where it was last recorded (nullptr: never)
  uint64_t position = 0;     // ... after that many items
  std::chrono::steady_clock::time_point when{};
  bool destroyed = false;
};

namespace {

struct State {
  std::mutex mu;
  std::condition_variable progress;
  std::vector<Stream*> legacy = std::vector<Stream*>(64, nullptr);
  std::set<Stream*> live;
  std::set<EventState*> events;
  cudaError_t pending = cudaSuccess;
  std::string pending_message;
  std::string last_message;
};

State& state() {
  static State* s = new State();
  return *s;
}

bool ready_locked(const Item& item) {
  for (const auto& [s, position] : item.after)
    if (s->done < position) return false;
  return true;
}

void worker_loop(Stream* s) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  for (;;) {
    st.progress.wait(lock, [&] { return (!s->items.empty() && ready_locked(s->items.front())) ||
                                        (s->destroyed && s->items.empty()); });
    if (s->items.empty()) return;  // destroyed and drained
    Work work = std::move(s->items.front().work);
    lock.unlock();
    std::string message;
    const cudaError_t err = work(message);
    lock.lock();
    if (err != cudaSuccess) {
      std::fprintf(stderr, "remat CUDA emulation: %s\n", message.c_str());
      if (st.pending == cudaSuccess) {
        st.pending = err;
        st.pending_message = message;
      }
      st.last_message = message;
    }
    s->items.pop_front();
    ++s->done;
    st.progress.notify_all();
  }
}

Stream* new_stream_locked(int device, bool legacy, bool blocking) {
  auto* s = new Stream();
  s->device = device;
  s->legacy = legacy;
  s->blocking = blocking;
  state().live.insert(s);
  std::thread(worker_loop, s).detach();
  return s;
}

Stream* legacy_stream_locked(int device) {
  State& st = state();
  if (st.legacy[device] == nullptr) st.legacy[device] = new_stream_locked(device, true, true);
  return st.legacy[device];
}

uint64_t push_locked(Stream* s, Item item) {
  State& st = state();
  // The legacy default stream's rule: its work waits for all earlier work of the device's
  // blocking streams, and their work waits for its earlier work.
  if (s->legacy) {
    for (Stream* other : st.live)
      if (other != s && other->device == s->device && other->blocking && !other->legacy)
        item.after.emplace_back(other, other->queued);
  } else if (s->blocking) {
    Stream* l = legacy_stream_locked(s->device);
    item.after.emplace_back(l, l->queued);
  }
  s->items.push_back(std::move(item));
  const uint64_t position = ++s->queued;
  st.progress.notify_all();
  return position;
}

cudaError_t wait_locked(std::unique_lock<std::mutex>& lock, Stream* s, uint64_t position) {
  State& st = state();
  st.progress.wait(lock, [&] { return s->done >= position; });
  cudaError_t err = st.pending;
  st.pending = cudaSuccess;
  return err;
}

EventState* event_of(cudaEvent_t e) { return reinterpret_cast<EventState*>(e); }

bool live_event_locked(cudaEvent_t e) {
  auto* ev = event_of(e);
  return ev != nullptr && state().events.count(ev) != 0 && !ev->destroyed;
}

}  // namespace

Stream* resolve(cudaStream_t stream) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    return legacy_stream_locked(current_device());
  }
  auto* s = reinterpret_cast<Stream*>(stream);
  return st.live.count(s) != 0 && !s->destroyed ? s : nullptr;
}

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int /*priority*/) {
  if (out == nullptr || (flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) != 0) return cudaErrorInvalidValue;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  *out = reinterpret_cast<cudaStream_t>(
      new_stream_locked(current_device(), false, (flags & cudaStreamNonBlocking) == 0));
  return cudaSuccess;
}

cudaError_t destroy_stream(cudaStream_t stream) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  auto* s = reinterpret_cast<Stream*>(stream);
  if (s == nullptr || st.live.count(s) == 0 || s->legacy || s->destroyed) return cudaErrorInvalidResourceHandle;
  s->destroyed = true;  // as CUDA: queued work still runs; then the worker ends
  st.progress.notify_all();
  return cudaSuccess;
}

uint64_t submit(Stream* stream, Work work) {
  std::lock_guard<std::mutex> lock(state().mu);
  return push_locked(stream, Item{std::move(work), {}});
}

uint64_t submit_after(Stream* stream, Stream* other, uint64_t position, Work work) {
  std::lock_guard<std::mutex> lock(state().mu);
  return push_locked(stream, Item{std::move(work), {{other, position}}});
}

cudaError_t synchronize_stream(Stream* s) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  return wait_locked(lock, s, s->queued);
}

cudaError_t synchronize_device(int device) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  std::vector<std::pair<Stream*, uint64_t>> targets;
  for (Stream* s : st.live)
    if (s->device == device) targets.emplace_back(s, s->queued);
  st.progress.wait(lock, [&] {
    for (const auto& [s, position] : targets)
      if (s->done < position) return false;
    return true;
  });
  cudaError_t err = st.pending;
  st.pending = cudaSuccess;
  return err;
}

cudaError_t query_stream(Stream* s) {
  std::lock_guard<std::mutex> lock(state().mu);
  return s->done >= s->queued ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t create_event(cudaEvent_t* out, unsigned flags) {
  if (out == nullptr ||
      (flags & ~static_cast<unsigned>(cudaEventBlockingSync | cudaEventDisableTiming)) != 0) {
    return cudaErrorInvalidValue;
  }
  auto* e = new EventState();
  e->timing = (flags & cudaEventDisableTiming) == 0;
  std::lock_guard<std::mutex> lock(state().mu);
  state().events.insert(e);
  *out = reinterpret_cast<cudaEvent_t>(e);
  return cudaSuccess;
}

cudaError_t destroy_event(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live_event_locked(event)) return cudaErrorInvalidResourceHandle;
  event_of(event)->destroyed = true;  // kept: queued records may still write its time
  return cudaSuccess;
}

cudaError_t record_event(cudaEvent_t event, Stream* s) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!live_event_locked(event)) return cudaErrorInvalidResourceHandle;
  EventState* e = event_of(event);
  const uint64_t position = push_locked(s, Item{[e](std::string&) {
                                                  e->when = std::chrono::steady_clock::now();
                                                  return cudaSuccess;
                                                },
                                                {}});
  e->stream = s;
  e->position = position;
  return cudaSuccess;
}

cudaError_t query_event(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live_event_locked(event)) return cudaErrorInvalidResourceHandle;
  EventState* e = event_of(event);
  return e->stream == nullptr || e->stream->done >= e->position ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t synchronize_event(cudaEvent_t event) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (!live_event_locked(event)) return cudaErrorInvalidResourceHandle;
  EventState* e = event_of(event);
  if (e->stream == nullptr) return cudaSuccess;
  return wait_locked(lock, e->stream, e->position);
}

cudaError_t wait_event(Stream* s, cudaEvent_t event) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!live_event_locked(event)) return cudaErrorInvalidResourceHandle;
  EventState* e = event_of(event);
  if (e->stream == nullptr) return cudaSuccess;  // never recorded: nothing to wait for
  push_locked(s, Item{[](std::string&) { return cudaSuccess; }, {{e->stream, e->position}}});
  return cudaSuccess;
}

cudaError_t elapsed_time(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (ms == nullptr) return cudaErrorInvalidValue;
  if (!live_event_locked(start) || !live_event_locked(end)) return cudaErrorInvalidResourceHandle;
  EventState* a = event_of(start);
  EventState* b = event_of(end);
  if (!a->timing || !b->timing || a->stream == nullptr || b->stream == nullptr) {
    return cudaErrorInvalidResourceHandle;
  }
  if (a->stream->done < a->position || b->stream->done < b->position) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}

cudaError_t take_pending_failure() {
  std::lock_guard<std::mutex> lock(state().mu);
  cudaError_t err = state().pending;
  state().pending = cudaSuccess;
  return err;
}

const char* last_failure_message() {
  // Kept for the process's life: cudaGetErrorString's result must stay valid.
  static thread_local std::string copy;
  std::lock_guard<std::mutex> lock(state().mu);
  copy = state().last_message;
  return copy.c_str();
}

}  // namespace remat::cuda_emu
