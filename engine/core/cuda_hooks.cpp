// Mirrors ATen/detail/CUDAHooksInterface.cpp (getCUDAHooks) and torch.cuda.is_available.
#include "engine/core/cuda_hooks.h"

#include <atomic>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace remat {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(std::string(what) + ": remat was built without CUDA (build with --config=cuda, or --config=cuda_emu "
                                  "for the emulated device); there is no pinned host memory to offload to");
}
}  // namespace

Tensor CUDAHooksInterface::copy_to_pinned_host(const Tensor&, std::shared_ptr<void>*) const {
  no_cuda("copy_to_pinned_host");
}
Tensor CUDAHooksInterface::copy_from_pinned_host(const Tensor&, const Device&, std::shared_ptr<void>*) const {
  no_cuda("copy_from_pinned_host");
}
void CUDAHooksInterface::wait_transfer(const std::shared_ptr<void>&) const { no_cuda("wait_transfer"); }
void CUDAHooksInterface::stream_wait_transfer(const std::shared_ptr<void>&) const { no_cuda("stream_wait_transfer"); }

namespace {
const CUDAHooksInterface& default_hooks() {
  static const CUDAHooksInterface* hooks = new CUDAHooksInterface();  // never destroyed
  return *hooks;
}
std::atomic<const CUDAHooksInterface*>& installed() {
  static std::atomic<const CUDAHooksInterface*> hooks{nullptr};
  return hooks;
}
}  // namespace

const CUDAHooksInterface& cuda_hooks() {
  const CUDAHooksInterface* h = installed().load(std::memory_order_acquire);
  return h != nullptr ? *h : default_hooks();
}

const CUDAHooksInterface* set_cuda_hooks(const CUDAHooksInterface* hooks) {
  return installed().exchange(hooks, std::memory_order_acq_rel);
}

bool cuda_is_available() { return cuda_hooks().is_available(); }
int64_t cuda_device_count() { return cuda_hooks().device_count(); }
void cuda_synchronize(int device) { cuda_hooks().synchronize(device); }

bool cuda::is_emulated() { return cuda_hooks().is_emulated(); }

}  // namespace remat
