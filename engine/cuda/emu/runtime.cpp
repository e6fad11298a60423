// The CUDA runtime calls of include/cuda_runtime_api.h on the emulated device (mirrors the
// semantics of NVIDIA's cudart for the calls remat makes).
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/cuda/emu/device_memory.h"
#include "engine/cuda/emu/emulation.h"
#include "engine/cuda/emu/schedule.h"
#include "engine/cuda/emu/streams.h"

namespace remat::cuda_emu {

namespace {

thread_local cudaError_t last_error = cudaSuccess;
thread_local int selected_device = 0;

int device_count() {
  static const int n = [] {
    const char* env = std::getenv("REMAT_CUDA_EMU_DEVICES");
    const int v = env != nullptr && *env != '\0' ? std::atoi(env) : 1;
    return v < 0 ? 0 : (v > 64 ? 64 : v);
  }();
  return n;
}

// Records an error as the calling thread's last error (as cudart does) and returns it.
cudaError_t fail(cudaError_t err) {
  if (err != cudaSuccess) last_error = err;
  return err;
}

struct FuncLimit {
  const void* func;
  size_t bytes;
};
std::mutex limits_mu;
std::vector<FuncLimit>& func_limits() {
  static auto* v = new std::vector<FuncLimit>();
  return *v;
}

bool is_device(const void* p) {
  Allocation a;
  return find_allocation_start(p, &a) && a.kind == MemoryKind::Device;
}

// The direction checked against where each pointer lives, and the device side of the range
// inside one allocation. cudaErrorInvalidValue as cudart gives it.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  const bool dst_dev = is_device(dst), src_dev = is_device(src);
  switch (kind) {
    case cudaMemcpyHostToHost:
      if (dst_dev || src_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyHostToDevice:
      if (!dst_dev || src_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToHost:
      if (dst_dev || !src_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToDevice:
      if (!dst_dev || !src_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDefault: break;
    default: return cudaErrorInvalidMemcpyDirection;
  }
  Allocation a;
  if (dst_dev && !find_allocation(dst, count, &a)) return cudaErrorInvalidValue;
  if (src_dev && !find_allocation(src, count, &a)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

// While schedules are compared, a copy waits for the kernel comparing them (schedule_comparison_mutex).
std::unique_lock<std::mutex> lock_against_schedule_comparison() {
  return compares_schedules() ? std::unique_lock<std::mutex>(schedule_comparison_mutex())
                              : std::unique_lock<std::mutex>();
}

bool is_pinned(const void* p) {
  Allocation a;
  return find_allocation_start(p, &a) && a.kind == MemoryKind::PinnedHost;
}

cudaError_t copy_async(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                       bool synchronous) {
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t err = check_copy(dst, src, count, kind); err != cudaSuccess) return fail(err);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  const bool dst_dev = is_device(dst), src_dev = is_device(src);
  // Pageable host memory, as cudart treats it: a copy from it is staged before the call returns
  // (the caller may reuse the buffer), a copy to it completes before the call returns. Pinned
  // memory is read and written when the stream gets there: a missing synchronise shows.
  if (!src_dev && !is_pinned(src)) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + count);
    submit(s, [dst, staged](std::string&) {
      std::unique_lock<std::mutex> lock = lock_against_schedule_comparison();
      std::memcpy(dst, staged->data(), staged->size());
      return cudaSuccess;
    });
  } else {
    submit(s, [dst, src, count](std::string&) {
      std::unique_lock<std::mutex> lock = lock_against_schedule_comparison();
      std::memmove(dst, src, count);
      return cudaSuccess;
    });
  }
  if (synchronous || (!dst_dev && !is_pinned(dst))) return fail(synchronize_stream(s));
  return cudaSuccess;
}

cudaError_t set_async(void* ptr, int value, size_t count, cudaStream_t stream, bool synchronous) {
  if (count == 0) return cudaSuccess;
  Allocation a;
  if (!find_allocation(ptr, count, &a) || a.kind != MemoryKind::Device) return fail(cudaErrorInvalidValue);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  submit(s, [ptr, value, count](std::string&) {
    std::unique_lock<std::mutex> lock = lock_against_schedule_comparison();
    std::memset(ptr, value, count);
    return cudaSuccess;
  });
  return synchronous ? fail(synchronize_stream(s)) : cudaSuccess;
}

}  // namespace

int current_device() { return selected_device; }

void set_last_error(cudaError_t error) {
  if (error != cudaSuccess) last_error = error;
}

size_t max_dynamic_shared_memory(const void* kernel) {
  std::lock_guard<std::mutex> lock(limits_mu);
  for (const auto& f : func_limits())
    if (f.func == kernel) return f.bytes;
  return DeviceLimits::kSharedMemoryPerBlock;
}

bool compares_schedules() { return schedules().size() > 1; }

std::mutex& schedule_comparison_mutex() {
  static std::mutex* m = new std::mutex();  // never destroyed: streams may run during teardown
  return *m;
}

cudaError_t enqueue(cudaStream_t stream, Work work) {
  Stream* s = resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  submit(s, std::move(work));
  return cudaSuccess;
}

}  // namespace remat::cuda_emu

using namespace remat::cuda_emu;

extern "C" {

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define REMAT_EMU_NAME(E) \
  case E: return #E;
    REMAT_EMU_NAME(cudaSuccess)
    REMAT_EMU_NAME(cudaErrorInvalidValue)
    REMAT_EMU_NAME(cudaErrorMemoryAllocation)
    REMAT_EMU_NAME(cudaErrorInitializationError)
    REMAT_EMU_NAME(cudaErrorInvalidConfiguration)
    REMAT_EMU_NAME(cudaErrorInvalidPitchValue)
    REMAT_EMU_NAME(cudaErrorInvalidSymbol)
    REMAT_EMU_NAME(cudaErrorInvalidDevicePointer)
    REMAT_EMU_NAME(cudaErrorInvalidMemcpyDirection)
    REMAT_EMU_NAME(cudaErrorNoDevice)
    REMAT_EMU_NAME(cudaErrorInvalidDevice)
    REMAT_EMU_NAME(cudaErrorInvalidResourceHandle)
    REMAT_EMU_NAME(cudaErrorNotReady)
    REMAT_EMU_NAME(cudaErrorIllegalAddress)
    REMAT_EMU_NAME(cudaErrorLaunchOutOfResources)
    REMAT_EMU_NAME(cudaErrorLaunchFailure)
    REMAT_EMU_NAME(cudaErrorNotSupported)
    REMAT_EMU_NAME(cudaErrorUnknown)
#undef REMAT_EMU_NAME
  }
  return "cudaErrorUnknown";
}

// cudart's strings. A kernel failure found by the emulation (a race between schedules, a
// barrier deadlock) also carries what was found, which a GPU cannot tell.
const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure: {
      static thread_local std::string s;
      const char* detail = last_failure_message();
      s = std::string("unspecified launch failure") + (*detail != '\0' ? std::string(": ") + detail : "");
      return s.c_str();
    }
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
  }
}

cudaError_t cudaGetLastError(void) {
  cudaError_t err = last_error;
  last_error = cudaSuccess;
  if (err == cudaSuccess) err = take_pending_failure();
  return err;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = device_count();
  return *count > 0 ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = selected_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  selected_device = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  using L = DeviceLimits;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = L::kMaxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = L::kMaxBlockDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = L::kMaxBlockDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = L::kMaxBlockDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = L::kMaxGridDim[0]; break;
    case cudaDevAttrMaxGridDimY: *value = L::kMaxGridDim[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = L::kMaxGridDim[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(L::kSharedMemoryPerBlock); break;
    case cudaDevAttrWarpSize: *value = L::kWarpSize; break;
    case cudaDevAttrMultiProcessorCount: *value = L::kMultiProcessors; break;
    case cudaDevAttrComputeCapabilityMajor: *value = L::kComputeMajor; break;
    case cudaDevAttrComputeCapabilityMinor: *value = L::kComputeMinor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(L::kSharedMemoryPerBlockOptin); break;
    default: return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  using L = DeviceLimits;
  std::memset(prop, 0, sizeof(*prop));
  std::strncpy(prop->name, "NVIDIA H200 (emulated by remat)", sizeof(prop->name) - 1);
  prop->totalGlobalMem = device_capacity();
  prop->sharedMemPerBlock = L::kSharedMemoryPerBlock;
  prop->sharedMemPerBlockOptin = L::kSharedMemoryPerBlockOptin;
  prop->warpSize = L::kWarpSize;
  prop->maxThreadsPerBlock = L::kMaxThreadsPerBlock;
  for (int i = 0; i < 3; ++i) {
    prop->maxThreadsDim[i] = L::kMaxBlockDim[i];
    prop->maxGridSize[i] = L::kMaxGridDim[i];
  }
  prop->multiProcessorCount = L::kMultiProcessors;
  prop->major = L::kComputeMajor;
  prop->minor = L::kComputeMinor;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return fail(synchronize_device(selected_device)); }

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (leastPriority != nullptr) *leastPriority = 0;  // an H200's range
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) { return cudaDriverGetVersion(version); }

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return fail(cudaErrorInvalidValue);
  *total = device_capacity();
  *free = *total - device_bytes_in_use(selected_device);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return fail(allocate(devPtr, size, MemoryKind::Device, selected_device));
}

cudaError_t cudaFree(void* devPtr) {
  // cudaFree synchronises the device first (work queued may still use the block).
  if (devPtr != nullptr) {
    if (cudaError_t err = synchronize_device(selected_device); err != cudaSuccess) return fail(err);
  }
  return fail(release(devPtr, MemoryKind::Device));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return fail(allocate(ptr, size, MemoryKind::PinnedHost, selected_device));
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int /*flags*/) { return cudaMallocHost(ptr, size); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr != nullptr) {
    if (cudaError_t err = synchronize_device(selected_device); err != cudaSuccess) return fail(err);
  }
  return fail(release(ptr, MemoryKind::PinnedHost));
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return fail(cudaErrorInvalidValue);
  Allocation a;
  std::memset(attributes, 0, sizeof(*attributes));
  attributes->device = -2;  // cudart's value for memory it does not know
  if (ptr != nullptr && find_allocation_start(ptr, &a)) {
    attributes->device = a.device;
    if (a.kind == MemoryKind::Device) {
      attributes->type = cudaMemoryTypeDevice;
      attributes->devicePointer = const_cast<void*>(ptr);
    } else {
      attributes->type = cudaMemoryTypeHost;
      attributes->devicePointer = const_cast<void*>(ptr);
      attributes->hostPointer = const_cast<void*>(ptr);
    }
  } else {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy_async(dst, src, count, kind, nullptr, /*synchronous=*/true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_async(dst, src, count, kind, stream, /*synchronous=*/false);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                                cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (dstDevice < 0 || dstDevice >= device_count() || srcDevice < 0 || srcDevice >= device_count()) {
    return fail(cudaErrorInvalidDevice);
  }
  Allocation d, s;
  if (!find_allocation(dst, count, &d) || d.kind != MemoryKind::Device || d.device != dstDevice ||
      !find_allocation(src, count, &s) || s.kind != MemoryKind::Device || s.device != srcDevice) {
    return fail(cudaErrorInvalidValue);
  }
  return copy_async(dst, src, count, cudaMemcpyDeviceToDevice, stream, false);
}

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  if (cudaError_t err = cudaMemcpyPeerAsync(dst, dstDevice, src, srcDevice, count, nullptr); err != cudaSuccess) {
    return err;
  }
  return fail(synchronize_device(selected_device));
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) { return set_async(devPtr, value, count, nullptr, true); }

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return set_async(devPtr, value, count, stream, false);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return fail(create_stream(stream, cudaStreamDefault, 0)); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return fail(create_stream(stream, flags, 0));
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  return fail(create_stream(stream, flags, priority));
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) { return fail(destroy_stream(stream)); }

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  return fail(synchronize_stream(s));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  return query_stream(s);  // cudaErrorNotReady is an answer, not an error: not recorded
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (flags != 0) return fail(cudaErrorInvalidValue);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  return fail(wait_event(s, event));
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return fail(create_event(event, cudaEventDefault)); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return fail(create_event(event, flags));
}

cudaError_t cudaEventDestroy(cudaEvent_t event) { return fail(destroy_event(event)); }

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  return fail(record_event(event, s));
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  cudaError_t err = query_event(event);
  return err == cudaErrorNotReady ? err : fail(err);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) { return fail(synchronize_event(event)); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  cudaError_t err = elapsed_time(ms, start, end);
  return err == cudaErrorNotReady ? err : fail(err);
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (func == nullptr || attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      static_cast<size_t>(value) > DeviceLimits::kSharedMemoryPerBlockOptin) {
    return fail(cudaErrorInvalidValue);
  }
  std::lock_guard<std::mutex> lock(limits_mu);
  for (auto& f : func_limits()) {
    if (f.func == func) {
      f.bytes = static_cast<size_t>(value);
      return cudaSuccess;
    }
  }
  func_limits().push_back({func, static_cast<size_t>(value)});
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (fn == nullptr) return fail(cudaErrorInvalidValue);
  Stream* s = resolve(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  submit(s, [fn, userData](std::string&) {
    fn(userData);
    return cudaSuccess;
  });
  return cudaSuccess;
}

}  // extern "C"
