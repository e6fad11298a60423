// Mirrors torch/utils/checkpoint.py (get_device_states, set_device_states) and
// torch/random.py (fork_rng).
#include "checkpoint/device_state.h"

namespace remat {

CapturedDeviceState CapturedDeviceState::capture(const std::vector<Tensor>& inputs, bool preserve_rng_state) {
  CapturedDeviceState s;
  s.preserve_rng_state = preserve_rng_state;
  s.autocast = get_autocast_state();
  if (!preserve_rng_state) return s;
  s.cpu_rng = get_rng_state(Device{kCPU});
  for (const Tensor& t : inputs) {
    if (!t.defined() || !t.device().is_cuda()) continue;
    bool seen = false;
    for (const auto& d : s.device_rngs) seen = seen || d.first == t.device();
    if (!seen) s.device_rngs.emplace_back(t.device(), get_rng_state(t.device()));
  }
  return s;
}

RestoreDeviceStateGuard::RestoreDeviceStateGuard(const CapturedDeviceState& state)
    : restore_rng_(state.preserve_rng_state), autocast_before_(get_autocast_state()) {
  if (restore_rng_) {
    cpu_before_ = get_rng_state(Device{kCPU});
    set_rng_state(state.cpu_rng, Device{kCPU});
    for (const auto& [device, rng] : state.device_rngs) {
      devices_before_.emplace_back(device, get_rng_state(device));
      set_rng_state(rng, device);
    }
  }
  set_autocast_state(state.autocast);
}

RestoreDeviceStateGuard::~RestoreDeviceStateGuard() {
  set_autocast_state(autocast_before_);
  if (restore_rng_) {
    set_rng_state(cpu_before_, Device{kCPU});
    for (const auto& [device, rng] : devices_before_) set_rng_state(rng, device);
  }
}

}  // namespace remat
