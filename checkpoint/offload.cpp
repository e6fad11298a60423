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
};

std::any pack_to_cpu(const Tensor& t, bool pin_memory) {
  Offloaded o{t.device(), Tensor(), nullptr};
  if (t.device().is_cpu()) {
    o.host = t;
  } else if (pin_memory && offload_detail::pinned_offload_hooks() != nullptr) {
    o.host = offload_detail::pinned_offload_hooks()->copy_to_pinned_host(t, &o.ready);
  } else {
    o.host = t.to(Device{kCPU});
  }
  trace::emit("save_on_cpu: pack " + std::to_string(t.nbytes()) + " bytes from " + t.device().str());
  return o;
}

Tensor unpack_from_cpu(const std::any& packed) {
  const auto& o = std::any_cast<const Offloaded&>(packed);
  if (o.ready) offload_detail::pinned_offload_hooks()->wait(o.ready);
  return o.device.is_cpu() ? o.host : o.host.to(o.device);
}

}  // namespace

save_on_cpu::save_on_cpu(bool pin_memory)
    : hooks_([pin_memory](const Tensor& t) { return pack_to_cpu(t, pin_memory); }, &unpack_from_cpu) {}

}  // namespace remat
