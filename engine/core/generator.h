// Mirrors ATen/core/Generator.h, ATen/CPUGeneratorImpl.h and ATen/cuda/CUDAGeneratorImpl.h:
// a Philox4x32-10 generator state (seed, offset), the same on every device.
//
// The offset rule (documented once, used by every random kernel on every device):
//   A random op call reserves one offset from its generator: `uint64_t o = gen->reserve()`,
//   which returns the current offset and advances it by one. Element i of that call takes
//   32-bit word (i % 4) of philox4x32_10(counter = {lo(i/4), hi(i/4), lo(o), hi(o)},
//   key = {lo(seed), hi(seed)}) (kernels/philox.h). Normal draws use block i/2 and words
//   (2*(i%2), 2*(i%2)+1) through Box-Muller. So a call's stream depends only on (seed, offset,
//   i): any device, any thread split, any machine gives the same bits, and two calls never
//   share a counter.
#pragma once

#include <cstdint>
#include <mutex>

#include "engine/core/device.h"

namespace remat {

struct RngState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  bool operator==(const RngState& o) const { return seed == o.seed && offset == o.offset; }
  bool operator!=(const RngState& o) const { return !(*this == o); }
};

class Generator {
 public:
  explicit Generator(uint64_t seed = kDefaultSeed, Device device = Device{kCPU})
      : seed_(seed), device_(device) {}
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;  // PyTorch's default_rng_seed_val

  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  uint64_t offset() const;
  Device device() const { return device_; }
  RngState get_state() const;
  void set_state(const RngState& state);

  // Reserves one offset for a random op call (see the rule above).
  uint64_t reserve();

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
  Device device_;
};

// The default generator of a device (one per CUDA device index).
Generator& default_generator(Device device = Device{kCPU});

// Seeds every device's default generator, as torch.manual_seed does.
void manual_seed(uint64_t seed);
RngState get_rng_state(Device device = Device{kCPU});
void set_rng_state(const RngState& state, Device device = Device{kCPU});

}  // namespace remat
