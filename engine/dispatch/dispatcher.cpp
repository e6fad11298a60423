// Mirrors ATen/core/dispatch/Dispatcher.cpp and OperatorEntry.cpp.
#include "engine/dispatch/dispatcher.h"

#include <algorithm>

namespace remat {

void KernelFunction::fallthrough_kernel(OperatorKernel*, const OperatorHandle& op, DispatchKeySet,
                                        Stack*) {
  throw Error("internal error: the fallthrough kernel of " + op.name() + " was called directly");
}

namespace {
// The boxed entry point of every WrapperKernel.
void wrapper_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const WrapperKernel& k = *static_cast<WrapperWithOp*>(functor)->kernel;
  const size_t n = op.schema().arguments().size();
  std::shared_ptr<void> state;
  const bool active = k.before(op, stack->data() + (stack->size() - n), n, &state);
  {
    ExcludeDispatchKeyGuard guard(k.key());
    op.redispatchBoxed(ks & DispatchKeySet::below(k.key()), stack);
  }
  if (active) {
    const size_t r = op.schema().returns().size();
    k.after(op, state, stack->data() + (stack->size() - r), r);
  }
}
}  // namespace

KernelFunction KernelFunction::makeFromWrapper(std::shared_ptr<WrapperKernel> kernel) {
  KernelFunction k(std::make_shared<WrapperWithOp>(std::move(kernel)), &wrapper_boxed, nullptr, nullptr);
  k.is_wrapper_ = true;
  return k;
}

void OperatorEntry::reportMissingSchema() const {
  throw Error(detail::str("operator ", name_,
                          " has kernels but no schema: it was registered with impl() but never def()'d"));
}

void OperatorEntry::reportMissingKernel(DispatchKey k) const {
  std::string available;
  for (int i = 1; i < kNumDispatchKeys; ++i) {
    if (kernels_[i].isValid() && !kernels_[i].isFallthrough())
      available += std::string(available.empty() ? "" : ", ") + toString(static_cast<DispatchKey>(i));
  }
  throw Error(detail::str("Could not run '", name_, "' with arguments from the '", toString(k),
                          "' backend. '", name_, "' is only available for these backends: [",
                          available, "]."));
}

void OperatorEntry::updateTable(const std::array<KernelFunction, kNumDispatchKeys>& fallbacks) {
  uint64_t mask = 0;
  for (int k = 0; k < kNumDispatchKeys; ++k) {
    table_[k] = kernels_[k].isValid() ? kernels_[k] : fallbacks[k];
    if (kernels_[k].isWrapper() && wrapper_trampoline_ != nullptr)
      table_[k] = kernels_[k].withUnboxed(wrapper_trampoline_, cpp_signature_);
    if (!kernels_[k].isValid() && fallbacks[k].isForwarding() && forwarding_trampoline_ != nullptr)
      table_[k] = fallbacks[k].forwardingFor(this, forwarding_trampoline_, cpp_signature_);
    // A missing kernel stays in the mask so the call fails with "Could not run" rather than
    // silently running a lower key.
    if (k != 0 && !table_[k].isFallthrough()) mask |= uint64_t{1} << k;
  }
  dispatch_mask_ = DispatchKeySet::fromRaw(mask);
}

Dispatcher::Dispatcher() = default;

Dispatcher& Dispatcher::singleton() {
  static Dispatcher* d = new Dispatcher();  // never destroyed: handles outlive static teardown
  return *d;
}

OperatorEntry* Dispatcher::findOrCreate(const std::string& name) {
  auto it = ops_.find(name);
  if (it != ops_.end()) return it->second.get();
  auto entry = std::make_unique<OperatorEntry>(name);
  entry->updateTable(fallbacks_);
  OperatorEntry* raw = entry.get();
  ops_.emplace(name, std::move(entry));
  return raw;
}

OperatorHandle Dispatcher::registerDef(FunctionSchema schema) {
  std::lock_guard<std::mutex> g(mutex_);
  OperatorEntry* e = findOrCreate(schema.name());
  REMAT_CHECK(!e->schema_.has_value(), "Tried to register an operator (", schema.str(),
              ") with the same name and overload name multiple times. Each overload's schema should "
              "only be registered with a single call to def(). Duplicate registration: ", schema.name());
  e->schema_ = std::move(schema);
  return OperatorHandle(e);
}

void Dispatcher::registerImpl(const std::string& name, DispatchKey key, KernelFunction kernel) {
  std::lock_guard<std::mutex> g(mutex_);
  OperatorEntry* e = findOrCreate(name);
  if (const std::type_info* sig = kernel.cppSignature()) {
    REMAT_CHECK(e->cpp_signature_ == nullptr || *e->cpp_signature_ == *sig,
                "Mismatch in kernel C++ signatures for ", name, ": registered ",
                e->cpp_signature_ ? e->cpp_signature_->name() : "", " and now ", sig->name(),
                " for key ", toString(key));
    e->cpp_signature_ = sig;
    if (e->wrapper_trampoline_ == nullptr) e->wrapper_trampoline_ = kernel.wrapperTrampoline();
    if (e->forwarding_trampoline_ == nullptr) e->forwarding_trampoline_ = kernel.forwardingTrampoline();
  }
  if (kernel.isWrapper()) kernel.bindWrapperOp(e);
  e->kernels_[static_cast<int>(key)] = std::move(kernel);
  e->updateTable(fallbacks_);
}

void Dispatcher::deregisterImpl(const std::string& name, DispatchKey key) {
  std::lock_guard<std::mutex> g(mutex_);
  OperatorEntry* e = findOrCreate(name);
  e->kernels_[static_cast<int>(key)] = KernelFunction();
  e->updateTable(fallbacks_);
}

void Dispatcher::registerFallback(DispatchKey key, KernelFunction kernel) {
  std::lock_guard<std::mutex> g(mutex_);
  REMAT_CHECK(!fallbacks_[static_cast<int>(key)].isValid(),
              "Tried to register multiple backend fallbacks for the same dispatch key ", toString(key));
  fallbacks_[static_cast<int>(key)] = std::move(kernel);
  for (auto& kv : ops_) kv.second->updateTable(fallbacks_);
}

std::optional<OperatorHandle> Dispatcher::findOp(const std::string& name) const {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = ops_.find(name);
  if (it == ops_.end() || !it->second->hasSchema()) return std::nullopt;
  return OperatorHandle(it->second.get());
}

std::vector<std::string> Dispatcher::registeredOps() const {
  std::lock_guard<std::mutex> g(mutex_);
  std::vector<std::string> names;
  for (const auto& kv : ops_)
    if (kv.second->hasSchema()) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

namespace detail {
DispatchKeySet keys_of_stack(const Stack& stack, size_t nargs) {
  DispatchKeySet ks;
  for (size_t i = stack.size() - nargs; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.isTensor()) ks = ks | keys_of(v.toTensor());
    else if (v.isTensorList()) ks = ks | keys_of(v.toTensorListRef());
  }
  if (!ks.empty()) return ks;
  for (size_t i = stack.size() - nargs; i < stack.size(); ++i)  // a factory: its Device (BackendSelect)
    if (stack[i].isDevice()) ks = ks | device_keys_of(stack[i].toDevice());
  return ks;
}
}  // namespace detail

void OperatorHandle::callBoxed(Stack* stack) const {
  schema().check_and_normalize(*stack);
  DispatchKeySet ks = detail::apply_tls(detail::keys_of_stack(*stack, stack->size()));
  CurrentOpGuard current_op(&name());
  entry_->lookup(ks).callBoxed(*this, ks, stack);
}

void OperatorHandle::redispatchBoxed(DispatchKeySet ks, Stack* stack) const {
  entry_->lookup(ks).callBoxed(*this, ks, stack);
}

std::vector<IValue> OperatorHandle::call(const std::vector<IValue>& args) const {
  // A pass-through: the arguments a forwarding fallback boxed for this op, unchanged.
  const detail::ForwardedCall* in_flight = detail::tls_forwarded_call;
  if (in_flight != nullptr && in_flight->stack == &args && in_flight->entry == entry_) {
    Stack out = detail::take_stack(1);
    in_flight->rerun_onto(*in_flight, &out);
    return out;
  }
  Stack stack = args;
  callBoxed(&stack);
  return stack;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::vector<std::string> closest_op_names(const std::string& name, size_t max_results) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& n : registered_ops()) scored.emplace_back(edit_distance(name, n), n);
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max_results; ++i) out.push_back(scored[i].second);
  return out;
}

OperatorHandle find_op(const std::string& qualified_name) {
  if (auto op = Dispatcher::singleton().findOp(qualified_name)) return *op;
  std::string hint;
  for (const std::string& n : closest_op_names(qualified_name)) hint += (hint.empty() ? "" : ", ") + n;
  throw Error(detail::str("find_op: no operator named '", qualified_name,
                          "' is registered. Closest registered names: ", hint));
}

std::vector<std::string> registered_ops() { return Dispatcher::singleton().registeredOps(); }

}  // namespace remat
