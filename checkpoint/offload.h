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
#pragma once

#include "engine/autograd/saved_variable_hooks.h"

namespace remat {

class save_on_cpu {
 public:
  explicit save_on_cpu(bool pin_memory = false);
  save_on_cpu(const save_on_cpu&) = delete;
  save_on_cpu& operator=(const save_on_cpu&) = delete;

 private:
  autograd::saved_tensors_hooks hooks_;
};

namespace offload_detail {
// Device hooks for pinned, asynchronous offload (installed by the CUDA backend). Without them,
// offload copies synchronously into ordinary host memory.
struct PinnedOffloadHooks {
  virtual ~PinnedOffloadHooks() = default;
  // Starts copying a device tensor into a new pinned host tensor; returns it with a token to wait on.
  virtual Tensor copy_to_pinned_host(const Tensor& device_tensor, std::shared_ptr<void>* ready) = 0;
  // Waits until the copy behind `ready` is complete.
  virtual void wait(const std::shared_ptr<void>& ready) = 0;
};
void set_pinned_offload_hooks(PinnedOffloadHooks* hooks);
PinnedOffloadHooks* pinned_offload_hooks();
}  // namespace offload_detail

}  // namespace remat
