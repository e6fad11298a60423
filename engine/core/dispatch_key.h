// Mirrors c10/core/DispatchKey.h: the keys a call can be dispatched on, in priority order.
#pragma once

#include <cstdint>

#include "engine/core/device.h"

namespace remat {

// Lowest priority first. A call runs the kernel of the highest key in its key set; that kernel
// redispatches to the keys below it. Backends < Python (dispatch modes) < Autograd < Autocast.
enum class DispatchKey : uint8_t {
  Undefined = 0,
  CPU,
  CUDA,
  Meta,
  Python,    // TorchDispatchMode: the fallback here calls the innermost dispatch mode
  Autograd,  // records the graph (one key for all backends; PyTorch has AutogradCPU, ...)
  Autocast,  // casts inputs per op, then calls the op again below this key
  NumDispatchKeys
};
constexpr int kNumDispatchKeys = static_cast<int>(DispatchKey::NumDispatchKeys);

constexpr const char* toString(DispatchKey k) {
  switch (k) {
    case DispatchKey::Undefined: return "Undefined";
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::Python: return "Python";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::Autocast: return "Autocast";
    case DispatchKey::NumDispatchKeys: break;
  }
  return "Unknown";
}

constexpr DispatchKey backendKey(DeviceType t) {
  switch (t) {
    case kCPU: return DispatchKey::CPU;
    case kCUDA: return DispatchKey::CUDA;
    case kMeta: return DispatchKey::Meta;
  }
  return DispatchKey::Undefined;
}

constexpr bool isBackendKey(DispatchKey k) {
  return k == DispatchKey::CPU || k == DispatchKey::CUDA || k == DispatchKey::Meta;
}

}  // namespace remat
