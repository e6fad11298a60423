// Mirrors torch/autograd/graph.py (save_on_cpu).
#include "checkpoint/offload.h"

#include "checkpoint/trace.h"
#include "ops/functions.h"

namespace remat {

namespace offload_detail {
namespace {
PinnedOffloadHooks* g_pinned_hooks = nullptr;
}
void set_pinned_offload_hooks(PinnedOffloadHooks* hooks) { g_pinned_hooks = hooks; }
PinnedOffloadHooks* pinned_offload_hooks() { return g_pinned_hooks; }
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
  } else if (pin_memory && offload_detail::pinned_offload_hooks() != nullptr) {
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
