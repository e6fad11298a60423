// The emulated device's memory table: see device_memory.h.
#include "engine/cuda/emu/device_memory.h"

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/cuda/emu/emulation.h"

namespace remat::cuda_emu {

namespace {

struct Table {
  std::mutex mu;
  std::map<const char*, Allocation> by_base;
  std::vector<size_t> in_use = std::vector<size_t>(64, 0);
  size_t pinned_in_use = 0;
};

Table& table() {
  static Table* t = new Table();  // never destroyed: freed during static teardown too
  return *t;
}

// 256-byte alignment, as cudaMalloc guarantees (kernels' 16-byte vector paths rely on less).
constexpr size_t kAlignment = 256;

bool lookup_locked(Table& t, const void* ptr, Allocation* out) {
  const char* p = static_cast<const char*>(ptr);
  auto it = t.by_base.upper_bound(p);
  if (it == t.by_base.begin()) return false;
  --it;
  const Allocation& a = it->second;
  if (p < a.base || p >= a.base + (a.size == 0 ? 1 : a.size)) return false;
  *out = a;
  return true;
}

}  // namespace

size_t device_capacity() {
  static const size_t capacity = [] {
    const char* env = std::getenv("REMAT_CUDA_EMU_MEMORY");
    return env != nullptr && *env != '\0' ? static_cast<size_t>(std::strtoull(env, nullptr, 10))
                                          : DeviceLimits::kGlobalMemory;
  }();
  return capacity;
}

size_t pinned_host_capacity() {
  // Read at every call (pinned allocations are few), so that a test can set it for one case.
  const char* env = std::getenv("REMAT_CUDA_EMU_HOST_MEMORY");
  return env != nullptr && *env != '\0' ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : SIZE_MAX;
}

size_t pinned_host_bytes_in_use() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.pinned_in_use;
}

cudaError_t allocate(void** ptr, size_t size, MemoryKind kind, int device) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;  // as cudaMalloc(&p, 0): success, p == nullptr
  Table& t = table();
  if (kind == MemoryKind::Device) {
    std::lock_guard<std::mutex> lock(t.mu);
    if (t.in_use[device] + size > device_capacity() || t.in_use[device] + size < size) {
      return cudaErrorMemoryAllocation;
    }
    t.in_use[device] += size;  // reserved before the host allocation, released if it fails
  } else {
    std::lock_guard<std::mutex> lock(t.mu);
    const size_t cap = pinned_host_capacity();
    if (t.pinned_in_use + size > cap || t.pinned_in_use + size < size) return cudaErrorMemoryAllocation;
    t.pinned_in_use += size;
  }
  void* p = nullptr;
  if (posix_memalign(&p, kAlignment, size) != 0 || p == nullptr) {
    std::lock_guard<std::mutex> lock(t.mu);
    (kind == MemoryKind::Device ? t.in_use[device] : t.pinned_in_use) -= size;
    return cudaErrorMemoryAllocation;
  }
  // Fresh device memory holds garbage on a GPU: a fixed non-zero pattern here, so a kernel that
  // reads memory nobody wrote does not get zeros by luck.
  if (kind == MemoryKind::Device) std::memset(p, 0xA5, size);
  std::lock_guard<std::mutex> lock(t.mu);
  t.by_base[static_cast<char*>(p)] = Allocation{static_cast<char*>(p), size, device, kind};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t release(void* ptr, MemoryKind kind) {
  if (ptr == nullptr) return cudaSuccess;
  Table& t = table();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.by_base.find(static_cast<char*>(ptr));
    // Not the start of a live allocation of this kind: cudaFree(host pointer), a double free, or
    // an interior pointer.
    if (it == t.by_base.end() || it->second.kind != kind) return cudaErrorInvalidValue;
    if (kind == MemoryKind::Device) t.in_use[it->second.device] -= it->second.size;
    if (kind == MemoryKind::PinnedHost) t.pinned_in_use -= it->second.size;
    t.by_base.erase(it);
  }
  std::free(ptr);  // under ASan the block goes to quarantine: a later use is reported
  return cudaSuccess;
}

bool find_allocation(const void* ptr, size_t size, Allocation* out) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  Allocation a;
  if (!lookup_locked(t, ptr, &a)) return false;
  const char* p = static_cast<const char*>(ptr);
  if (size > static_cast<size_t>(a.base + a.size - p)) return false;
  *out = a;
  return true;
}

bool find_allocation_start(const void* ptr, Allocation* out) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return lookup_locked(t, ptr, out);
}

size_t device_bytes_in_use(int device) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.in_use[device];
}

MemorySnapshot snapshot_device_memory(const void* kernel_args, size_t bytes) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  MemorySnapshot s;
  std::vector<const char*> taken;
  for (size_t off = 0; off + sizeof(uintptr_t) <= bytes; off += sizeof(uintptr_t)) {
    uintptr_t word;
    std::memcpy(&word, static_cast<const char*>(kernel_args) + off, sizeof word);
    Allocation a;
    if (!lookup_locked(t, reinterpret_cast<const void*>(word), &a) || a.kind != MemoryKind::Device) continue;
    bool seen = false;
    for (const char* b : taken) seen = seen || b == a.base;
    if (seen) continue;
    taken.push_back(a.base);
    s.regions.push_back({a.base, std::vector<char>(a.base, a.base + a.size)});
  }
  return s;
}

void restore_device_memory(const MemorySnapshot& snapshot) {
  for (const auto& r : snapshot.regions) std::memcpy(r.base, r.bytes.data(), r.bytes.size());
}

std::string first_difference(const MemorySnapshot& snapshot) {
  for (const auto& r : snapshot.regions) {
    if (std::memcmp(r.base, r.bytes.data(), r.bytes.size()) == 0) continue;
    size_t i = 0;
    while (r.base[i] == r.bytes[i]) ++i;
    char where[32];
    std::snprintf(where, sizeof where, "%p", static_cast<void*>(r.base));
    return "byte " + std::to_string(i) + " of the " + std::to_string(r.bytes.size()) + "-byte allocation at " + where;
  }
  return "";
}

}  // namespace remat::cuda_emu
