// The emulated device's streams and events: each stream is a queue of work that a worker thread
// of its own runs asynchronously and in order, with the legacy default stream's implicit
// synchronisation; an event marks a point in a stream's queue. Mirrors what the driver does
// for CUstream / CUevent.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "engine/cuda/emu/emulation.h"

namespace remat::cuda_emu {

struct Stream;

// A stream handle resolved: nullptr for an unknown or destroyed stream.
Stream* resolve(cudaStream_t stream);
cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority);
cudaError_t destroy_stream(cudaStream_t stream);

// Queues work on a resolved stream; returns its position in the stream's queue.
uint64_t submit(Stream* stream, Work work);
// Queues work that waits, before it runs, for `other` to have run `position` items.
uint64_t submit_after(Stream* stream, Stream* other, uint64_t position, Work work);
// Blocks until the stream has run everything queued on it so far; returns (and clears) the
// first failure reported by any work since the last synchronising call.
cudaError_t synchronize_stream(Stream* stream);
// Same for every stream of a device.
cudaError_t synchronize_device(int device);
// cudaSuccess if the stream has run everything queued on it, else cudaErrorNotReady.
cudaError_t query_stream(Stream* stream);

// Events.
struct EventState;
cudaError_t create_event(cudaEvent_t* out, unsigned flags);
cudaError_t destroy_event(cudaEvent_t event);
cudaError_t record_event(cudaEvent_t event, Stream* stream);
cudaError_t query_event(cudaEvent_t event);
cudaError_t synchronize_event(cudaEvent_t event);
cudaError_t wait_event(Stream* stream, cudaEvent_t event);
cudaError_t elapsed_time(float* ms, cudaEvent_t start, cudaEvent_t end);

// A failure that synchronising calls and cudaGetLastError report once.
cudaError_t take_pending_failure();
// The message of the most recent failure ("" if none): cudaGetErrorString appends it.
const char* last_failure_message();

}  // namespace remat::cuda_emu
