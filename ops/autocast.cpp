// Mirrors aten/src/ATen/autocast_mode.cpp: the autocast state and the kernels at the Autocast
// key (cast policy per op, as PyTorch's CPU lists: lower_precision_fp and fp32).
#include "ops/autocast.h"

#include "engine/dispatch/library.h"
#include "ops/defs.h"
#include "ops/functions.h"

namespace remat {

namespace {
thread_local AutocastState tls_autocast;

void sync_autocast_key() {
  bool any = false;
  for (bool e : tls_autocast.enabled) any = any || e;
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  tls.included = any ? tls.included.add(DispatchKey::Autocast) : tls.included.remove(DispatchKey::Autocast);
}
}  // namespace

bool AutocastState::operator==(const AutocastState& o) const {
  for (int i = 0; i < kNumDeviceTypes; ++i)
    if (enabled[i] != o.enabled[i] || dtype[i] != o.dtype[i]) return false;
  return true;
}

AutocastState get_autocast_state() { return tls_autocast; }
void set_autocast_state(const AutocastState& state) {
  tls_autocast = state;
  sync_autocast_key();
}
bool is_autocast_enabled(DeviceType type) { return tls_autocast.enabled[static_cast<int>(type)]; }
ScalarType get_autocast_dtype(DeviceType type) { return tls_autocast.dtype[static_cast<int>(type)]; }

autocast::autocast(DeviceType type, ScalarType dtype, bool enabled) : previous_(tls_autocast) {
  REMAT_CHECK(dtype == kBFloat16 || dtype == kHalf || dtype == kFloat,
              "autocast: In autocast, but the target dtype is not supported. Supported dtypes are "
              "BFloat16, Half and Float (got ", toString(dtype), ")");
  tls_autocast.enabled[static_cast<int>(type)] = enabled;
  tls_autocast.dtype[static_cast<int>(type)] = dtype;
  sync_autocast_key();
}
autocast::~autocast() { set_autocast_state(previous_); }

namespace {

using ops::CastPolicy;

// The autocast kernel: cast float/bf16/half tensor arguments on an autocast-enabled device, then call
// the op again with Autocast excluded (so autograd, modes and backends see the cast inputs).
template <CastPolicy policy>
void autocast_kernel(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  ExcludeDispatchKeyGuard below(DispatchKey::Autocast);
  const size_t n = op.schema().arguments().size();
  for (size_t i = stack->size() - n; i < stack->size(); ++i) {
    IValue& v = (*stack)[i];
    if (!v.isTensor()) continue;
    const Tensor& t = v.toTensor();
    DeviceType dev = t.device().type;
    // Only float, bf16 and half are eligible: float64 tensors are left alone (PyTorch's is_eligible).
    if (!isFloatingType(t.dtype()) || t.dtype() == kDouble || !is_autocast_enabled(dev)) continue;
    ScalarType target = policy == CastPolicy::Float32 ? kFloat : get_autocast_dtype(dev);
    if (t.dtype() != target) v = IValue(t.to(target));
  }
  op.callBoxed(stack);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, Autocast, m) {
  auto lower = KernelFunction::makeFromBoxedLambda(&autocast_kernel<CastPolicy::LowerPrecision>);
  auto fp32 = KernelFunction::makeFromBoxedLambda(&autocast_kernel<CastPolicy::Float32>);
  // the Defs that give a policy (mm, bmm, addmm; softmax, log_softmax, cross_entropy)
  ops::for_each_def([&](auto def) {
    using Def = typename decltype(def)::type;
    if constexpr (ops::HasCastPolicy<Def>::value)
      m.impl(Def::name, Def::autocast_policy == CastPolicy::LowerPrecision ? lower : fp32);
  });
  // the composites, by name (they are no Defs): their kernel casts before they decompose
  for (const char* name : {"matmul", "linear"}) m.impl(name, lower);
  for (const char* name : {"layer_norm", "rms_norm"}) m.impl(name, fp32);
}

}  // namespace remat
