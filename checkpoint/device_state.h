// Mirrors the device-state helpers of torch/utils/checkpoint.py (get_device_states,
// set_device_states, _get_autocast_kwargs) and torch.random.fork_rng: what a checkpoint
// captures in forward so that recomputation sees the same random numbers and autocast state.
#pragma once

#include <vector>

#include "engine/core/device.h"
#include "engine/core/generator.h"
#include "engine/core/tensor.h"
#include "ops/autocast.h"

namespace remat {

struct CapturedDeviceState {
  bool preserve_rng_state = true;
  RngState cpu_rng;
  std::vector<std::pair<Device, RngState>> device_rngs;  // one per non-CPU device among the inputs
  AutocastState autocast;

  // Captures the CPU generator, the generator of each device among inputs, and autocast.
  static CapturedDeviceState capture(const std::vector<Tensor>& inputs, bool preserve_rng_state);
};

// While alive: the captured RNG states and autocast state are in force; on destruction the
// states that were current before are restored (fork_rng + autocast context).
class RestoreDeviceStateGuard {
 public:
  explicit RestoreDeviceStateGuard(const CapturedDeviceState& state);
  ~RestoreDeviceStateGuard();
  RestoreDeviceStateGuard(const RestoreDeviceStateGuard&) = delete;
  RestoreDeviceStateGuard& operator=(const RestoreDeviceStateGuard&) = delete;

 private:
  bool restore_rng_;
  RngState cpu_before_;
  std::vector<std::pair<Device, RngState>> devices_before_;
  AutocastState autocast_before_;
};

}  // namespace remat
