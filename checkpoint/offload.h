// Mirrors torch.autograd.graph.save_on_cpu: saved-tensor hooks that move every tensor autograd
// saves to host memory in forward and back to its device when backward unpacks it.
//
//   { save_on_cpu offload(/*pin_memory=*/true);
//     loss = model(x); }          // activations live in host memory until backward
//   loss.backward();
//
// CPU tensors stay where they are (the copy would be a no-op) but still go through pack and
// unpack, so the hooks compose with checkpoint in both nestings. With pin_memory, device tensors
// are copied into pinned host buffers (asynchronously on CUDA; unpack waits for the copy).
//
// The same machinery moves the outputs that selective checkpointing's policy answers
// MUST_CPU_OFFLOAD or PREFER_CPU_OFFLOAD for (checkpoint/selective.h) to pinned host memory and
// back: offload_detail::OffloadedTensor below is one such tensor's life.
#pragma once

#include <memory>
#include <string>

#include "engine/autograd/saved_variable_hooks.h"
#include "engine/core/dry_run.h"

namespace remat {

// Whether tensors on `device` can be offloaded to pinned host memory: a CUDA device (a GPU, or the
// emulated device), or the Meta device in a dry run that imitates CUDA (it counts what the CUDA
// run would pin). Not the CPU (its tensors are in host memory already) nor a Meta run counting
// like the CPU. SAC's offload policies act as SAVE where this is false (and say so in the trace);
// a caller that must not degrade (a plan that offloads) uses check_offload_supported.
bool offload_supported(const Device& device);
// Throws CheckpointError unless offload_supported(device); the message names `who` and the device.
void check_offload_supported(const Device& device, const std::string& who);

class save_on_cpu {
 public:
  explicit save_on_cpu(bool pin_memory = false);
  save_on_cpu(const save_on_cpu&) = delete;
  save_on_cpu& operator=(const save_on_cpu&) = delete;

 private:
  autograd::saved_tensors_hooks hooks_;
};

namespace offload_detail {
// Device hooks for pinned, asynchronous offload. While CUDA is available and no hooks were set,
// pinned_offload_hooks() returns the CUDA backend's (through CUDAHooksInterface, engine/core/
// cuda_hooks.h: copies on a side stream, pinned buffers from cudaMallocHost). Without any,
// save_on_cpu copies synchronously into ordinary host memory, and SAC cannot offload.
struct PinnedOffloadHooks {
  virtual ~PinnedOffloadHooks() = default;
  // Starts copying a device tensor into a new pinned host tensor; returns it with a token to wait on.
  virtual Tensor copy_to_pinned_host(const Tensor& device_tensor, std::shared_ptr<void>* ready) = 0;
  // Waits until the copy behind `ready` is complete.
  virtual void wait(const std::shared_ptr<void>& ready) = 0;
  // Starts copying a pinned host tensor into a new tensor on `device` (allocated now, on the current
  // stream); wait on `ready` (wait or stream_wait) before using it.
  virtual Tensor copy_to_device(const Tensor& host_tensor, const Device& device, std::shared_ptr<void>* ready);
  // Makes the current stream wait for the copy behind `ready` (no host wait); default: wait().
  virtual void stream_wait(const std::shared_ptr<void>& ready) { wait(ready); }
};
void set_pinned_offload_hooks(PinnedOffloadHooks* hooks);
PinnedOffloadHooks* pinned_offload_hooks();

// One op output that SAC offloads (CheckpointPolicy::MUST_CPU_OFFLOAD / PREFER_CPU_OFFLOAD), from
// its copy to host to its return to the device. Every step happens at a point of the program, not
// of the copies' timing, so that a Meta dry run imitating CUDA allocates and frees the same device
// and host bytes at the same points as the CUDA run:
//   constructor      right after the producer: a pinned host buffer of nbytes is allocated and the
//                    copy starts on the offload stream (after an event on the current stream); the
//                    device tensor is still held. On Meta: the dry run's host counter grows.
//   release_device() the host waits for the copy, then the device tensor is dropped (SAC calls it
//                    for all of a region's offloads when the region's forward ends).
//   fetch()          a device tensor is allocated (current stream) and the copy back starts on the
//                    offload stream; no-op if the tensor is on the device already.
//   take()           fetch() if needed, the current stream and the host wait for the copy, the host
//                    buffer is freed; returns the device tensor (once).
// The values are the producer's bits: the gradient is bitwise that of keeping the tensor.
class OffloadedTensor {
 public:
  // `t` must be offloadable: offload_supported(t.device()), and the whole of its storage
  // (contiguous, offset 0). Throws CheckpointError naming `what` and the bytes when pinned memory
  // cannot be had (never keeps the tensor on the device instead).
  OffloadedTensor(const Tensor& t, const std::string& what);
  ~OffloadedTensor();
  OffloadedTensor(const OffloadedTensor&) = delete;
  OffloadedTensor& operator=(const OffloadedTensor&) = delete;

  void release_device();
  void fetch();
  Tensor take();
  // After the copy to host started, before release: throws (naming `what`) if the device tensor
  // was changed in place since, whose change the host copy would not have.
  void check_unmodified(const std::string& what) const;
  void wait_copy();  // the host waits for the pending copy, if any
  bool on_device() const { return device_tensor_.defined(); }
  bool taken() const { return taken_; }
  int64_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Whether `t` is a tensor OffloadedTensor can move (its whole storage, on a device that offloads).
  static bool can_offload(const Tensor& t);

 private:
  Device device_;
  ScalarType dtype_;
  Shape sizes_;
  int64_t nbytes_;
  uint32_t version_;
  Tensor device_tensor_;            // until release_device(); again after fetch()
  Tensor host_;                     // the pinned copy (CUDA)
  std::shared_ptr<void> pending_;   // the transfer in flight, if any
  intrusive_ptr<DryRunState> dry_run_;  // Meta: the dry run whose host counter counts nbytes_
  bool host_held_ = false;
  bool taken_ = false;
  void free_host();
};
}  // namespace offload_detail

}  // namespace remat
