// Mirrors c10/core/Device.h and c10/core/DeviceType.h.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace remat {

enum class DeviceType : int8_t { CPU, CUDA, Meta };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kMeta = DeviceType::Meta;
constexpr int kNumDeviceTypes = 3;

constexpr const char* toString(DeviceType t) {
  switch (t) {
    case kCPU: return "cpu";
    case kCUDA: return "cuda";
    case kMeta: return "meta";
  }
  return "unknown";
}

struct Device {
  DeviceType type = kCPU;
  int index = 0;
  constexpr Device(DeviceType t = kCPU, int i = 0) : type(t), index(i) {}  // NOLINT: Device(kCUDA)
  constexpr bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }
  constexpr bool is_cpu() const { return type == kCPU; }
  constexpr bool is_cuda() const { return type == kCUDA; }
  constexpr bool is_meta() const { return type == kMeta; }
  std::string str() const {
    return type == kCUDA ? "cuda:" + std::to_string(index) : std::string(toString(type));
  }
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace remat
