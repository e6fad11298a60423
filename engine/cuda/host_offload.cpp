// Mirrors ATen/cuda/CachingHostAllocator.cpp (pinned host memory) and the side-stream copies of
// torch.autograd.graph.save_on_cpu / FSDP offload: see host_offload.h.
#include "engine/cuda/host_offload.h"

#include <array>
#include <functional>
#include <mutex>

#include "engine/core/storage.h"
#include "engine/cuda/caching_allocator.h"
#include "engine/cuda/cuda_event.h"
#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_functions.h"
#include "engine/cuda/cuda_guard.h"

namespace remat::cuda {

namespace {

constexpr int kMaxDevices = 64;

// Pinned host memory: one cudaMallocHost per storage (no cache), counted as the CPU counts (the
// bytes asked), in the CPU's statistics and in the offloaded-bytes statistics of CUDA.
class PinnedHostAllocator final : public Allocator {
 public:
  void* allocate(Device, size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t err = cudaMallocHost(&p, nbytes);
    if (err != cudaSuccess || p == nullptr) {
      (void)cudaGetLastError();
      throw Error(detail::str("pinned host memory: cudaMallocHost of ", nbytes, " bytes failed (",
                              cudaGetErrorString(err), ", ", cudaGetErrorName(err), "; ",
                              offloaded_memory_allocated(Device{kCUDA}), " bytes of offloaded tensors already pinned)"));
    }
    cpu().on_reserve(static_cast<int64_t>(nbytes), 1);
    cpu().on_alloc(static_cast<int64_t>(nbytes));
    offloaded_host_stats(Device{kCUDA}).on_alloc(static_cast<int64_t>(nbytes));
    notify_allocation(Device{kCPU}, static_cast<int64_t>(nbytes));
    return p;
  }
  void deallocate(Device, void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    REMAT_CUDA_CHECK(cudaFreeHost(ptr));
    cpu().on_reserve(-static_cast<int64_t>(nbytes), -1);
    cpu().on_free(static_cast<int64_t>(nbytes));
    offloaded_host_stats(Device{kCUDA}).on_free(static_cast<int64_t>(nbytes));
    notify_allocation(Device{kCPU}, -static_cast<int64_t>(nbytes));
  }
  // The CPU's own: memory_allocated(Device{kCPU}) and its categories include pinned bytes.
  AllocatorStats& stats(Device) override { return cpu(); }

 private:
  static AllocatorStats& cpu() { return get_allocator(Device{kCPU})->stats(Device{kCPU}); }
};

// A transfer's completion: an event recorded on the offload stream after the copy.
struct Transfer {
  int device = 0;
  CUDAEvent done;
};

void check_copyable(const Tensor& t, const char* who) {
  REMAT_CHECK(t.defined(), who, ": undefined tensor");
  REMAT_CHECK(t.is_contiguous() && t.storage_offset() == 0 &&
                  static_cast<size_t>(t.nbytes()) == t.impl()->storage()->nbytes(),
              who, ": expected a tensor that is its whole storage (contiguous, offset 0), got ", t.sizes(),
              " with strides ", t.strides(), " at offset ", t.storage_offset());
}

// Starts `copy` on the device's offload stream after the current stream's queued work.
std::shared_ptr<void> transfer(int device, const std::function<void(cudaStream_t)>& copy) {
  CUDAGuard guard(device);
  const CUDAStream current = getCurrentCUDAStream(device);
  const CUDAStream side = offload_stream(device);
  CUDAEvent ready;
  ready.record(current);
  ready.block(side);
  copy(side.stream());
  auto t = std::make_shared<Transfer>();
  t->device = device;
  t->done.record(side);
  return t;
}

Transfer& transfer_of(const std::shared_ptr<void>& done) {
  REMAT_CHECK(done != nullptr, "wait_transfer: no transfer");
  return *static_cast<Transfer*>(done.get());
}

}  // namespace

CUDAStream offload_stream(int device) {
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<cudaStream_t, kMaxDevices> streams{};
  check_device(Device{kCUDA, device}, "offload_stream");
  REMAT_CHECK(device < kMaxDevices, "offload_stream: bad device index ", device);
  std::call_once(once[static_cast<size_t>(device)],
                 [&] { streams[static_cast<size_t>(device)] = getStreamFromPool(false, device).stream(); });
  return CUDAStream(device, streams[static_cast<size_t>(device)]);
}

Allocator* pinned_host_allocator() {
  static PinnedHostAllocator* a = new PinnedHostAllocator();  // never destroyed: storages may outlive statics
  return a;
}

Tensor copy_to_pinned_host(const Tensor& src, std::shared_ptr<void>* done) {
  REMAT_CHECK(src.defined() && src.is_cuda(), "copy_to_pinned_host: expected a CUDA tensor, got ",
              src.defined() ? src.device().str() : std::string("an undefined tensor"));
  check_copyable(src, "copy_to_pinned_host");
  const size_t n = static_cast<size_t>(src.nbytes());
  auto storage = make_intrusive<StorageImpl>(n, Device{kCPU}, pinned_host_allocator());
  Tensor host(make_intrusive<TensorImpl>(std::move(storage), src.dtype(), src.sizes(), src.strides(), 0));
  const int device = src.device().index;
  void* dst = host.data_ptr();
  const void* from = src.data_ptr();
  *done = transfer(device, [&](cudaStream_t side) {
    if (n != 0) REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, from, n, cudaMemcpyDeviceToHost, side));
  });
  // The offload stream reads the source: its block is not reused before that is done.
  if (n != 0) CUDACachingAllocator::record_stream(src, offload_stream(device));
  return host;
}

Tensor copy_from_pinned_host(const Tensor& host, const Device& device, std::shared_ptr<void>* done) {
  REMAT_CHECK(host.defined() && host.device().is_cpu(), "copy_from_pinned_host: expected a CPU tensor, got ",
              host.defined() ? host.device().str() : std::string("an undefined tensor"));
  check_copyable(host, "copy_from_pinned_host");
  check_device(device, "copy_from_pinned_host");
  const size_t n = static_cast<size_t>(host.nbytes());
  Tensor dst;
  {
    CUDAGuard guard(device.index);
    dst = make_empty(host.sizes(), host.dtype(), device);  // on the current stream: used there
  }
  void* to = dst.data_ptr();
  const void* from = host.data_ptr();
  *done = transfer(device.index, [&](cudaStream_t side) {
    if (n != 0) REMAT_CUDA_CHECK(cudaMemcpyAsync(to, from, n, cudaMemcpyHostToDevice, side));
  });
  return dst;
}

void wait_transfer(const std::shared_ptr<void>& done) { transfer_of(done).done.synchronize(); }

void stream_wait_transfer(const std::shared_ptr<void>& done) {
  Transfer& t = transfer_of(done);
  t.done.block(getCurrentCUDAStream(t.device));
}

}  // namespace remat::cuda
