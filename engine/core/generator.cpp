// Mirrors ATen/CPUGeneratorImpl.cpp and torch.random (manual_seed, get/set_rng_state).
#include "engine/core/generator.h"

#include <map>
#include <memory>

#include "engine/core/error.h"

namespace remat {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(mutex_);
  seed_ = seed;
  offset_ = 0;
}
uint64_t Generator::seed() const { std::lock_guard<std::mutex> g(mutex_); return seed_; }
uint64_t Generator::offset() const { std::lock_guard<std::mutex> g(mutex_); return offset_; }
RngState Generator::get_state() const {
  std::lock_guard<std::mutex> g(mutex_);
  return RngState{seed_, offset_};
}
void Generator::set_state(const RngState& s) {
  std::lock_guard<std::mutex> g(mutex_);
  seed_ = s.seed;
  offset_ = s.offset;
}
uint64_t Generator::reserve() {
  std::lock_guard<std::mutex> g(mutex_);
  return offset_++;
}

namespace {
struct DefaultGenerators {
  std::mutex mutex;
  uint64_t seed = Generator::kDefaultSeed;
  Generator cpu{Generator::kDefaultSeed, Device{kCPU}};
  std::map<int, std::unique_ptr<Generator>> cuda;
};
DefaultGenerators& defaults() {
  static DefaultGenerators* d = new DefaultGenerators();
  return *d;
}
}  // namespace

Generator& default_generator(Device device) {
  DefaultGenerators& d = defaults();
  if (device.is_cpu()) return d.cpu;
  REMAT_CHECK(device.is_cuda(), "default_generator: no random generator for device ", device);
  std::lock_guard<std::mutex> g(d.mutex);
  auto& slot = d.cuda[device.index];
  if (!slot) slot = std::make_unique<Generator>(d.seed, device);
  return *slot;
}

void manual_seed(uint64_t seed) {
  DefaultGenerators& d = defaults();
  d.cpu.manual_seed(seed);
  std::lock_guard<std::mutex> g(d.mutex);
  d.seed = seed;  // CUDA generators created later start from this seed too
  for (auto& kv : d.cuda) kv.second->manual_seed(seed);
}

RngState get_rng_state(Device device) { return default_generator(device).get_state(); }
void set_rng_state(const RngState& state, Device device) { default_generator(device).set_state(state); }

}  // namespace remat
