// Mirrors ATen/core/dispatch/Dispatcher.h, OperatorEntry.h and OperatorHandle: the table of
// operators, each with a kernel per dispatch key, and the calls that pick one.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "engine/core/memory_context.h"
#include "engine/dispatch/function_schema.h"
#include "engine/dispatch/kernel_function.h"
#include "engine/dispatch/local_dispatch_key_set.h"

namespace remat {

class Dispatcher;

// One operator: its schema and its kernels. Never destroyed (handles point at it).
class OperatorEntry {
 public:
  explicit OperatorEntry(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  bool hasSchema() const { return schema_.has_value(); }
  // Inline: the boxed path reads the schema several times per call; the check is out of line.
  const FunctionSchema& schema() const {
    if (__builtin_expect(!schema_.has_value(), 0)) reportMissingSchema();
    return *schema_;
  }
  const std::type_info* cppSignature() const { return cpp_signature_; }
  bool hasKernelForKey(DispatchKey k) const { return kernels_[static_cast<int>(k)].isValid(); }

  // The kernel to run for a call with key set ks; throws "Could not run" if there is none.
  const KernelFunction& lookup(DispatchKeySet ks) const {
    DispatchKey k = (ks & dispatch_mask_).highestPriorityKey();
    const KernelFunction& kernel = table_[static_cast<int>(k)];
    if (__builtin_expect(!kernel.isValid(), 0)) reportMissingKernel(k);
    return kernel;
  }

 private:
  friend class Dispatcher;
  [[noreturn]] void reportMissingKernel(DispatchKey k) const;
  [[noreturn]] void reportMissingSchema() const;
  void updateTable(const std::array<KernelFunction, kNumDispatchKeys>& fallbacks);

  std::string name_;
  std::optional<FunctionSchema> schema_;
  const std::type_info* cpp_signature_ = nullptr;
  void* wrapper_trampoline_ = nullptr;     // WrapperKernel entry point for cpp_signature_
  void* forwarding_trampoline_ = nullptr;  // forwarding-fallback entry point for cpp_signature_
  std::array<KernelFunction, kNumDispatchKeys> kernels_;  // registered for this op
  std::array<KernelFunction, kNumDispatchKeys> table_;    // kernel, else backend fallback
  DispatchKeySet dispatch_mask_;  // keys whose table entry is not a fallthrough
};

template <class FuncType> class TypedOperatorHandle;

class OperatorHandle {
 public:
  OperatorHandle() = default;
  explicit OperatorHandle(OperatorEntry* entry) : entry_(entry) {}

  const std::string& name() const { return entry_->name(); }  // "aten::mm"
  const FunctionSchema& schema() const { return entry_->schema(); }
  bool hasSchema() const { return entry_->hasSchema(); }
  bool has_tag(Tag t) const { return hasSchema() && schema().has_tag(t); }
  bool operator==(const OperatorHandle& o) const { return entry_ == o.entry_; }
  bool operator!=(const OperatorHandle& o) const { return entry_ != o.entry_; }
  const OperatorEntry* entry() const { return entry_; }

  // Boxed call from the top of the dispatch order (what a dispatch mode's `op.call` does).
  std::vector<IValue> call(const std::vector<IValue>& args) const;
  // Boxed call on a stack: arguments in, returns out.
  void callBoxed(Stack* stack) const;
  // Boxed call with an explicit key set (from inside a kernel: "run the keys below me").
  void redispatchBoxed(DispatchKeySet ks, Stack* stack) const;

  // The typed fast path for C++ signature FuncType (must match the registered kernels).
  template <class FuncType>
  TypedOperatorHandle<FuncType> typed() const;

 protected:
  OperatorEntry* entry_ = nullptr;
};

namespace detail {
inline DispatchKeySet keys_of(const Tensor& t) { return t.defined() ? t.impl()->key_set() : DispatchKeySet(); }
inline DispatchKeySet keys_of(const std::vector<Tensor>& ts) {
  DispatchKeySet ks;
  for (const Tensor& t : ts) ks = ks | keys_of(t);
  return ks;
}
template <class T>
DispatchKeySet keys_of(const T&) { return DispatchKeySet(); }
// A factory (an op with no tensor argument, as ones(size, dtype, device)) dispatches on its
// Device argument: PyTorch's BackendSelect key, which computes the backend from TensorOptions.
inline DispatchKeySet device_keys_of(const Device& d) { return DispatchKeySet(backendKey(d.type)); }
template <class T>
DispatchKeySet device_keys_of(const T&) { return DispatchKeySet(); }

inline DispatchKeySet apply_tls(DispatchKeySet ks) {
  const LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  return (ks | tls.included) - tls.excluded;
}
DispatchKeySet keys_of_stack(const Stack& stack, size_t nargs);
}  // namespace detail

template <class R, class... Args>
class TypedOperatorHandle<R(Args...)> : public OperatorHandle {
 public:
  TypedOperatorHandle() = default;
  explicit TypedOperatorHandle(OperatorEntry* e) : OperatorHandle(e) {}

  R call(Args... args) const {
    DispatchKeySet tensor_keys = (DispatchKeySet() | ... | detail::keys_of(args));
    if (tensor_keys.empty()) tensor_keys = (DispatchKeySet() | ... | detail::device_keys_of(args));
    DispatchKeySet ks = detail::apply_tls(tensor_keys);
    CurrentOpGuard current_op(&name());  // what the memory tracker names an allocation by
    return entry_->lookup(ks).template call<R, Args...>(*this, ks, std::forward<Args>(args)...);
  }
  // ks: the keys still to run (a kernel passes its own key set minus itself and above).
  R redispatch(DispatchKeySet ks, Args... args) const {
    return entry_->lookup(ks).template call<R, Args...>(*this, ks, std::forward<Args>(args)...);
  }
};

class Dispatcher {
 public:
  static Dispatcher& singleton();

  // Registration (torch/library.h calls these; see engine/dispatch/library.h).
  OperatorHandle registerDef(FunctionSchema schema);
  void registerImpl(const std::string& name, DispatchKey key, KernelFunction kernel);
  void registerFallback(DispatchKey key, KernelFunction kernel);
  // Removes an op's kernel for a key (tests re-registering).
  void deregisterImpl(const std::string& name, DispatchKey key);

  std::optional<OperatorHandle> findOp(const std::string& name) const;
  std::vector<std::string> registeredOps() const;  // ops with a schema, sorted

 private:
  Dispatcher();
  OperatorEntry* findOrCreate(const std::string& name);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<OperatorEntry>> ops_;
  std::array<KernelFunction, kNumDispatchKeys> fallbacks_;
};

// find_op("aten::mm"): throws remat::Error naming the op and the closest registered names.
OperatorHandle find_op(const std::string& qualified_name);
std::vector<std::string> registered_ops();
// The registered op names closest to `name` (edit distance), best first.
std::vector<std::string> closest_op_names(const std::string& name, size_t max_results = 3);

namespace detail {

// The unboxed entry point of a WrapperKernel for signature R(Args...): box the arguments into a
// stack array, run before(), redispatch below the wrapper's key with the original C++
// arguments, box the returns for after().
// The returns are borrowed: `after` runs while the result is alive.
template <class R> struct ReturnsAsIValues;
template <> struct ReturnsAsIValues<Tensor> {
  static constexpr size_t n = 1;
  static void fill(const Tensor& r, IValue* out) { out[0] = IValue::unsafe_borrow(r); }
};
template <> struct ReturnsAsIValues<std::vector<Tensor>> {
  static constexpr size_t n = 1;
  static void fill(const std::vector<Tensor>& r, IValue* out) { out[0] = IValue(r); }
};
template <class... Ts> struct ReturnsAsIValues<std::tuple<Ts...>> {
  static constexpr size_t n = sizeof...(Ts);
  static void fill(const std::tuple<Ts...>& r, IValue* out) {
    size_t i = 0;
    std::apply([&](const auto&... e) { ((out[i++] = borrow_ivalue(e)), ...); }, r);
  }
};

template <class R, class... Args>
R wrapper_unboxed(OperatorKernel* functor, DispatchKeySet ks, Args... args);

template <class Sig> struct WrapperTrampoline;
template <class R, class... Args> struct WrapperTrampoline<R(Args...)> {
  static void* get() { return reinterpret_cast<void*>(&wrapper_unboxed<R, Args...>); }
};

// A typed call at a forwarding fallback (see KernelFunction::makeForwardingFallback): its
// arguments, boxed in place and borrowed, and how to run it again from the top of the dispatch
// order with its original C++ arguments, either into its own result (a pass-through: no boxed
// returns) or onto a stack (what OperatorHandle::call returns when given exactly the stack the
// fallback put the arguments on, for the same op: the call the boxed arguments describe, since a
// mode cannot change a stack it sees as const).
struct ForwardedCall {
  const OperatorEntry* entry;
  IValue* args;       // the arguments, borrowed; the fallback may move them onto its stack
  size_t nargs;
  const void* typed_args;  // std::tuple of references to the C++ arguments
  void* result;            // the typed call's R
  void (*rerun_into_result)(const ForwardedCall& call);
  void (*rerun_onto)(const ForwardedCall& call, Stack* out);
  void (*set_result)(const ForwardedCall& call, Stack& rets);  // unboxes returns into *result
  mutable const Stack* stack = nullptr;  // where the fallback put the arguments, if anywhere
};
// The innermost call whose arguments a fallback put on a stack; no TLS init guard.
inline thread_local const ForwardedCall* tls_forwarded_call = nullptr;

template <class R, class... Args>
R forwarding_unboxed(OperatorKernel* functor, DispatchKeySet ks, Args... args);

template <class Sig> struct ForwardingTrampoline;
template <class R, class... Args> struct ForwardingTrampoline<R(Args...)> {
  static void* get() { return reinterpret_cast<void*>(&forwarding_unboxed<R, Args...>); }
};

}  // namespace detail

template <auto F>
KernelFunction KernelFunction::makeFromUnboxedFunction() {
  using Sig = detail::kernel_signature_t<F>;
  using W = detail::UnboxedWrapper<F, Sig>;
  KernelFunction k(nullptr, &W::boxed, reinterpret_cast<void*>(&W::unboxed), &typeid(Sig));
  k.wrapper_trampoline_ = detail::WrapperTrampoline<Sig>::get();
  k.forwarding_trampoline_ = detail::ForwardingTrampoline<Sig>::get();
  return k;
}

template <class FuncType>
TypedOperatorHandle<FuncType> OperatorHandle::typed() const {
  const std::type_info* sig = entry_->cppSignature();
  REMAT_CHECK(sig == nullptr || *sig == typeid(FuncType), "typed<", typeid(FuncType).name(),
              ">() on ", name(), ": the registered kernels have C++ signature ", sig->name());
  return TypedOperatorHandle<FuncType>(entry_);
}

}  // namespace remat

namespace remat::detail {

template <class R, class... Args>
R wrapper_unboxed(OperatorKernel* functor, DispatchKeySet ks, Args... args) {
  const auto* w = static_cast<const WrapperWithOp*>(functor);
  const WrapperKernel& k = *w->kernel;
  TypedOperatorHandle<R(Args...)> op(const_cast<OperatorEntry*>(w->entry));
  // Borrowed: before() only reads them (what it keeps, it copies).
  const IValue boxed[sizeof...(Args) + 1] = {borrow_ivalue(args)..., IValue()};
  std::shared_ptr<void> state;
  const bool active = k.before(op, boxed, sizeof...(Args), &state);
  const DispatchKeySet below = ks & DispatchKeySet::below(k.key());
  R result = [&] {
    ExcludeDispatchKeyGuard guard(k.key());
    return op.redispatch(below, std::forward<Args>(args)...);
  }();
  if (active) {
    IValue rets[ReturnsAsIValues<R>::n];
    ReturnsAsIValues<R>::fill(result, rets);
    k.after(op, state, rets, ReturnsAsIValues<R>::n);
  }
  return result;
}

// The call again, with the C++ arguments it was made with (lvalues: a second rerun sees them too).
template <class R, class... Args>
R rerun_typed(const ForwardedCall& call) {
  using Refs = std::tuple<std::add_lvalue_reference_t<Args>...>;
  TypedOperatorHandle<R(Args...)> op(const_cast<OperatorEntry*>(call.entry));
  return std::apply([&](auto&... a) { return op.call(a...); }, *static_cast<const Refs*>(call.typed_args));
}
template <class R, class... Args>
void rerun_into_result(const ForwardedCall& call) {
  *static_cast<R*>(call.result) = rerun_typed<R, Args...>(call);
}
template <class R, class... Args>
void rerun_onto(const ForwardedCall& call, Stack* out) {
  ReturnBoxing<R>::push(*out, rerun_typed<R, Args...>(call));
}
template <class R>
void set_result(const ForwardedCall& call, Stack& rets) {
  *static_cast<R*>(call.result) = ReturnBoxing<R>::pop(rets);
}

template <class R, class... Args>
R forwarding_unboxed(OperatorKernel* functor, DispatchKeySet ks, Args... args) {
  const auto* f = static_cast<const ForwardingFallbackWithOp*>(functor);
  // The arguments, borrowed: they live within this call (a mode that keeps them copies).
  IValue boxed[sizeof...(Args) + 1] = {borrow_ivalue(args)..., IValue()};
  const std::tuple<std::add_lvalue_reference_t<Args>...> refs(args...);
  R result{};
  const ForwardedCall call{f->entry, boxed, sizeof...(Args), &refs, &result, &rerun_into_result<R, Args...>,
                           &rerun_onto<R, Args...>, &set_result<R>};
  f->typed(OperatorHandle(const_cast<OperatorEntry*>(f->entry)), ks, call);
  return result;
}

}  // namespace remat::detail
