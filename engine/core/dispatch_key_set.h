// Mirrors c10/core/DispatchKeySet.h: a 64-bit set of dispatch keys.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/dispatch_key.h"

namespace remat {

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k)
      : repr_(k == DispatchKey::Undefined ? 0 : uint64_t{1} << static_cast<int>(k)) {}
  static constexpr DispatchKeySet fromRaw(uint64_t repr) {
    DispatchKeySet s;
    s.repr_ = repr;
    return s;
  }
  // Every key strictly below k (what a kernel at k redispatches to).
  static constexpr DispatchKeySet below(DispatchKey k) {
    return fromRaw((uint64_t{1} << static_cast<int>(k)) - 1);
  }

  constexpr bool has(DispatchKey k) const { return (repr_ & DispatchKeySet(k).repr_) != 0; }
  constexpr bool empty() const { return repr_ == 0; }
  constexpr uint64_t raw() const { return repr_; }
  constexpr DispatchKeySet add(DispatchKey k) const { return fromRaw(repr_ | DispatchKeySet(k).repr_); }
  constexpr DispatchKeySet remove(DispatchKey k) const {
    return fromRaw(repr_ & ~DispatchKeySet(k).repr_);
  }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return fromRaw(repr_ | o.repr_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return fromRaw(repr_ & o.repr_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return fromRaw(repr_ & ~o.repr_); }
  constexpr bool operator==(DispatchKeySet o) const { return repr_ == o.repr_; }
  constexpr bool operator!=(DispatchKeySet o) const { return repr_ != o.repr_; }

  DispatchKey highestPriorityKey() const {
    return repr_ == 0 ? DispatchKey::Undefined : static_cast<DispatchKey>(63 - __builtin_clzll(repr_));
  }
  std::string str() const {
    std::string s = "DispatchKeySet(";
    for (int k = 1; k < kNumDispatchKeys; ++k) {
      if (has(static_cast<DispatchKey>(k))) {
        if (s.back() != '(') s += ", ";
        s += toString(static_cast<DispatchKey>(k));
      }
    }
    return s + ")";
  }

 private:
  uint64_t repr_ = 0;
};

}  // namespace remat
