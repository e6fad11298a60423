// Mirrors aten/src/ATen/autocast_mode.h and torch.autocast: automatic mixed precision.
//
//   { autocast guard(kCPU, kBFloat16);
//     Tensor y = mm(a, b);         // runs in bfloat16 (a and b are cast)
//     Tensor p = softmax(y, -1);   // runs in float32 }
//
// While enabled for a device type, the Autocast dispatch key is in the thread's included set;
// its kernel casts an op's float/bf16/half inputs on that device to the op's autocast dtype (the
// lower-precision list: mm, bmm, matmul, addmm, linear; the float32 list: softmax, log_softmax,
// layer_norm, rms_norm, cross_entropy), then calls the op again below Autocast. A Def gives its
// op's policy (`static constexpr ops::CastPolicy autocast_policy`: mm, bmm, addmm, softmax,
// log_softmax, cross_entropy); the composites (matmul, linear, layer_norm, rms_norm) are listed by
// name in ops/autocast.cpp, as PyTorch's autocast_mode.cpp lists every op. The casts are
// ordinary _to_copy calls, so autograd records them. autocast(kMeta) applies the same lists to
// Meta tensors, so a dry run of an autocast step allocates what the real step does.
#pragma once

#include <type_traits>

#include "engine/core/device.h"
#include "engine/core/scalar_type.h"

namespace remat {

namespace ops {
// What the autocast kernel casts an op's inputs to (at::autocast::CastPolicy: lower_precision_fp,
// fp32): the device's autocast dtype, or float32.
enum class CastPolicy { LowerPrecision, Float32 };

// Whether Def gives an autocast policy (static constexpr CastPolicy autocast_policy).
template <class Def, class = void>
struct HasCastPolicy : std::false_type {};
template <class Def>
struct HasCastPolicy<Def, std::void_t<decltype(Def::autocast_policy)>> : std::true_type {};
}  // namespace ops

// The thread's autocast settings for every device type (what checkpoint captures and restores).
struct AutocastState {
  bool enabled[kNumDeviceTypes] = {false, false, false};
  ScalarType dtype[kNumDeviceTypes] = {kBFloat16, kHalf, kBFloat16};
  bool operator==(const AutocastState& o) const;
  bool operator!=(const AutocastState& o) const { return !(*this == o); }
};

AutocastState get_autocast_state();
void set_autocast_state(const AutocastState& state);
bool is_autocast_enabled(DeviceType type);
ScalarType get_autocast_dtype(DeviceType type);

// RAII: `with torch.autocast(device_type, dtype, enabled):`
class autocast {
 public:
  autocast(DeviceType type, ScalarType dtype = kBFloat16, bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  AutocastState previous_;
};

}  // namespace remat
