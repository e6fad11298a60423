// Mirrors torch/autograd/graph.py (save_on_cpu).
#include "checkpoint/offload.h"

#include "checkpoint/checkpoint.h"
#include "checkpoint/trace.h"
#include "engine/core/cuda_hooks.h"
#include "engine/core/storage.h"
#include "ops/functions.h"

namespace remat {

bool offload_supported(const Device& device) {
  if (device.is_cuda()) return cuda_is_available();
  return device.is_meta() && meta_accounting() == kCUDA;
}

void check_offload_supported(const Device& device, const std::string& who) {
  if (offload_supported(device)) return;
  std::string why = device.is_cpu() ? "its tensors are in host memory already; offload needs a CUDA device"
                    : device.is_meta()
                        ? "a Meta dry run offloads only while it imitates CUDA (DryRun(kCUDA) or MetaAccountingGuard(kCUDA))"
                        : "CUDA is not available";
  throw CheckpointError(who + ": cannot offload tensors of " + device.str() + " to pinned host memory (" + why + ")");
}

namespace offload_detail {
namespace {
PinnedOffloadHooks* g_pinned_hooks = nullptr;

// The CUDA backend's transfers (CUDAHooksInterface), the hooks used while none are set.
struct CUDAPinnedOffloadHooks final : PinnedOffloadHooks {
  Tensor copy_to_pinned_host(const Tensor& t, std::shared_ptr<void>* ready) override {
    return cuda_hooks().copy_to_pinned_host(t, ready);
  }
  void wait(const std::shared_ptr<void>& ready) override { cuda_hooks().wait_transfer(ready); }
  Tensor copy_to_device(const Tensor& host, const Device& device, std::shared_ptr<void>* ready) override {
    return cuda_hooks().copy_from_pinned_host(host, device, ready);
  }
  void stream_wait(const std::shared_ptr<void>& ready) override { cuda_hooks().stream_wait_transfer(ready); }
};
}  // namespace

Tensor PinnedOffloadHooks::copy_to_device(const Tensor& host, const Device& device, std::shared_ptr<void>* ready) {
  *ready = nullptr;
  return host.to(device);
}

void set_pinned_offload_hooks(PinnedOffloadHooks* hooks) { g_pinned_hooks = hooks; }
PinnedOffloadHooks* pinned_offload_hooks() {
  if (g_pinned_hooks != nullptr) return g_pinned_hooks;
  static CUDAPinnedOffloadHooks* cuda = new CUDAPinnedOffloadHooks();  // never destroyed
  return cuda_is_available() ? cuda : nullptr;
}

bool OffloadedTensor::can_offload(const Tensor& t) {
  return t.defined() && offload_supported(t.device()) && t.is_contiguous() && t.storage_offset() == 0 &&
         t.impl()->storage() && static_cast<size_t>(t.nbytes()) == t.impl()->storage()->nbytes();
}

OffloadedTensor::OffloadedTensor(const Tensor& t, const std::string& what)
    : device_(t.device()), dtype_(t.dtype()), sizes_(t.sizes()), nbytes_(t.nbytes()), version_(t._version()),
      device_tensor_(t) {
  REMAT_INTERNAL_ASSERT(can_offload(t), "OffloadedTensor: not offloadable");
  if (t.is_meta()) {
    dry_run_ = detail::retain_current_dry_run();
    dry_run_->offloaded.on_alloc(nbytes_);
    host_held_ = true;
    return;
  }
  PinnedOffloadHooks* hooks = pinned_offload_hooks();
  REMAT_INTERNAL_ASSERT(hooks != nullptr, "OffloadedTensor: no pinned offload hooks on ", t.device());
  try {
    MemoryCategoryGuard offloaded(MemoryCategory::Offloaded);
    host_ = hooks->copy_to_pinned_host(t, &pending_);
  } catch (const Error& e) {
    throw CheckpointError(detail::str(
        "selective checkpoint: cannot offload ", what, " (", nbytes_, " bytes, ", toString(dtype_), " ", sizes_,
        " on ", device_, ") to pinned host memory: ", e.what(),
        ". It is not kept on the device instead (an offload policy never falls back to keeping the tensor): free "
        "or raise the host's pinned memory, or answer MUST_SAVE for this op"));
  }
  host_held_ = true;
}

OffloadedTensor::~OffloadedTensor() {
  try {
    wait_copy();
  } catch (...) {
  }
  free_host();
}

void OffloadedTensor::wait_copy() {
  if (pending_ == nullptr) return;
  pinned_offload_hooks()->wait(pending_);
}

void OffloadedTensor::free_host() {
  if (!host_held_) return;
  host_held_ = false;
  host_ = Tensor();
  if (dry_run_) {
    dry_run_->offloaded.on_free(nbytes_);
    dry_run_ = intrusive_ptr<DryRunState>();
  }
}

void OffloadedTensor::check_unmodified(const std::string& what) const {
  if (!device_tensor_.defined() || device_tensor_._version() == version_) return;
  throw CheckpointError(detail::str(
      "Tensor cached during selective activation checkpoint has been mutated: ", what,
      " was offloaded to host memory (its copy started right after the op), then modified in place on ", device_,
      " (version ", version_, " when offloaded, now ", device_tensor_._version(),
      "); backward would get the value before the change"));
}

void OffloadedTensor::release_device() {
  if (!device_tensor_.defined()) return;
  wait_copy();  // the copy has read the block: it may be reused at once
  pending_ = nullptr;
  device_tensor_ = Tensor();
}

void OffloadedTensor::fetch() {
  if (device_tensor_.defined() || taken_) return;
  if (device_.is_meta()) {
    device_tensor_ = make_empty(sizes_, dtype_, device_);
  } else {
    device_tensor_ = pinned_offload_hooks()->copy_to_device(host_, device_, &pending_);
  }
  claim_memory(device_tensor_, MemoryCategory::Activation);
}

Tensor OffloadedTensor::take() {
  REMAT_INTERNAL_ASSERT(!taken_, "OffloadedTensor: taken twice");
  fetch();
  if (pending_ != nullptr) {
    PinnedOffloadHooks* hooks = pinned_offload_hooks();
    hooks->stream_wait(pending_);
    hooks->wait(pending_);  // before the host buffer is freed
    pending_ = nullptr;
  }
  free_host();
  taken_ = true;
  Tensor t = std::move(device_tensor_);
  device_tensor_ = Tensor();
  return t;
}

}  // namespace offload_detail

namespace {

struct Offloaded {
  Device device;                // where the tensor lived
  Tensor host;                  // its copy in host memory (or the tensor itself on CPU)
  std::shared_ptr<void> ready;  // pending asynchronous copy, if any
  Shape sizes;                  // a Meta dry run imitating CUDA keeps only the geometry
  ScalarType dtype = kFloat;
};

// A dry run on Meta does what the imitated device would: on the CPU the tensor stays where it
// is; from CUDA it leaves the device (no Meta bytes held) and comes back as a fresh copy.
bool meta_imitating_offload(const Tensor& t) { return t.is_meta() && meta_accounting() == kCUDA; }

std::any pack_to_cpu(const Tensor& t, bool pin_memory) {
  Offloaded o{t.device(), Tensor(), nullptr, {}, t.dtype()};
  if (meta_imitating_offload(t)) {
    o.sizes = t.sizes();
  } else if (t.device().is_cpu() || t.is_meta()) {
    o.host = t;
  } else if (pin_memory && offload_detail::pinned_offload_hooks() != nullptr &&
             offload_detail::OffloadedTensor::can_offload(t)) {  // a view is copied as below
    o.host = offload_detail::pinned_offload_hooks()->copy_to_pinned_host(t, &o.ready);
  } else {
    o.host = t.to(Device{kCPU});
  }
  claim_memory(o.host, MemoryCategory::Activation);
  trace::emit("save_on_cpu: pack " + std::to_string(t.nbytes()) + " bytes from " + t.device().str());
  return o;
}

Tensor unpack_from_cpu(const std::any& packed) {
  const auto& o = std::any_cast<const Offloaded&>(packed);
  if (o.ready) offload_detail::pinned_offload_hooks()->wait(o.ready);
  if (!o.host.defined()) return make_empty(o.sizes, o.dtype, o.device);  // Meta imitating CUDA
  return o.device.is_cpu() || o.device.is_meta() ? o.host : o.host.to(o.device);
}

}  // namespace

save_on_cpu::save_on_cpu(bool pin_memory)
    : hooks_([pin_memory](const Tensor& t) { return pack_to_cpu(t, pin_memory); }, &unpack_from_cpu) {}

}  // namespace remat
