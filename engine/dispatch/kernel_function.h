// Mirrors ATen/core/boxing/KernelFunction.h: one kernel, callable boxed (a Stack of IValues)
// and, when registered from a C++ function, unboxed (a direct call with C++ arguments).
#pragma once

#include <functional>
#include <memory>
#include <typeinfo>
#include <utility>

#include "engine/dispatch/boxing.h"
#include "engine/core/dispatch_key_set.h"

namespace remat {

class OperatorHandle;

// Base of stateful kernels (a kernel that carries data, like an autograd formula or a custom
// op's Python-like callable).
struct OperatorKernel {
  virtual ~OperatorKernel() = default;
};

// A kernel that runs code around the call of the keys below its own (the autograd kernel is
// one: build the node, run the op below, connect the outputs). It sees the arguments and
// returns as IValues, but the dispatcher gives it an unboxed entry point per op signature (the
// arguments are boxed into a stack array, never a heap Stack), so the typed path stays fast.
class WrapperKernel : public OperatorKernel {
 public:
  WrapperKernel(DispatchKey key) : key_(key) {}  // NOLINT
  DispatchKey key() const { return key_; }
  // Returns false when there is nothing to do (the call just runs below); else fills state.
  virtual bool before(const OperatorHandle& op, const IValue* args, size_t n, std::shared_ptr<void>* state) const = 0;
  virtual void after(const OperatorHandle& op, const std::shared_ptr<void>& state, const IValue* rets,
                     size_t n) const = 0;

 private:
  DispatchKey key_;
};

class OperatorEntry;
// What a registered WrapperKernel is called with: the kernel and its op (the unboxed entry
// point has no OperatorHandle argument).
struct WrapperWithOp : OperatorKernel {
  explicit WrapperWithOp(std::shared_ptr<WrapperKernel> k) : kernel(std::move(k)) {}
  std::shared_ptr<WrapperKernel> kernel;
  const OperatorEntry* entry = nullptr;
};

// A boxed kernel pops its arguments from the stack and pushes its returns.
using BoxedKernelFn = void (*)(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks,
                               Stack* stack);

namespace detail {
struct ForwardedCall;  // dispatcher.h
}
// A forwarding fallback's entry for typed calls: the call's arguments arrive boxed (borrowed), with
// the means to run the typed call again and to hand it its result (see detail::ForwardedCall).
using ForwardedKernelFn = void (*)(const OperatorHandle& op, DispatchKeySet ks, const detail::ForwardedCall& call);

// What a forwarding fallback's unboxed entry point is called with: the fallback and its op.
struct ForwardingFallbackWithOp : OperatorKernel {
  ForwardingFallbackWithOp(ForwardedKernelFn t, const OperatorEntry* e) : typed(t), entry(e) {}
  ForwardedKernelFn typed;
  const OperatorEntry* entry;
};
using BoxedLambda = std::function<void(const OperatorHandle& op, DispatchKeySet ks, Stack* stack)>;

namespace detail {

template <class F> struct FunctionTraits;
template <class R, class... Args> struct FunctionTraits<R (*)(Args...)> {
  using Return = R;
  using ArgsTuple = std::tuple<Args...>;
  static constexpr size_t arity = sizeof...(Args);
};

template <class Tuple> struct TakesKeySetFirst : std::false_type {};
template <class... Rest> struct TakesKeySetFirst<std::tuple<DispatchKeySet, Rest...>> : std::true_type {};

// Wraps a C++ function F : R(Args...) or R(DispatchKeySet, Args...) into the two entry points.
template <auto F, class Sig> struct UnboxedWrapper;
template <auto F, class R, class... Args>
struct UnboxedWrapper<F, R(Args...)> {
  static constexpr bool kWithKeySet =
      TakesKeySetFirst<typename FunctionTraits<decltype(F)>::ArgsTuple>::value;

  static R unboxed(OperatorKernel*, DispatchKeySet ks, Args... args) {
    if constexpr (kWithKeySet) {
      return F(ks, std::forward<Args>(args)...);
    } else {
      (void)ks;
      return F(std::forward<Args>(args)...);
    }
  }
  static void boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet ks, Stack* stack) {
    constexpr size_t n = sizeof...(Args);
    REMAT_CHECK(stack->size() >= n, "boxed call with ", stack->size(), " arguments, expected ", n);
    size_t first = stack->size() - n;
    auto f = [ks](auto&&... a) -> R { return unboxed(nullptr, ks, std::forward<decltype(a)>(a)...); };
    R r = call_with_stack_args<Args...>(f, *stack, first, std::index_sequence_for<Args...>{});
    stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(first), stack->end());
    ReturnBoxing<R>::push(*stack, std::move(r));
  }
};

// The signature a kernel is called with: F's, minus a leading DispatchKeySet.
template <class Tuple, class R> struct SigFromTuple;
template <class R, class... Args> struct SigFromTuple<std::tuple<Args...>, R> { using type = R(Args...); };
template <class R, class... Args> struct SigFromTuple<std::tuple<DispatchKeySet, Args...>, R> {
  using type = R(Args...);
};
template <auto F>
using kernel_signature_t = typename SigFromTuple<typename FunctionTraits<decltype(F)>::ArgsTuple,
                                                 typename FunctionTraits<decltype(F)>::Return>::type;

}  // namespace detail

class KernelFunction {
 public:
  KernelFunction() = default;

  bool isValid() const { return boxed_ != nullptr; }
  bool isFallthrough() const { return boxed_ == &fallthrough_kernel; }
  const std::type_info* cppSignature() const { return signature_; }

  // Marks "skip this key": dispatch continues with the next key below.
  static KernelFunction makeFallthrough() { return KernelFunction(nullptr, &fallthrough_kernel, nullptr, nullptr); }

  static KernelFunction makeFromBoxedLambda(BoxedLambda f) {
    return KernelFunction(std::make_shared<BoxedLambdaFunctor>(std::move(f)), &BoxedLambdaFunctor::call,
                          nullptr, nullptr);
  }
  // A plain boxed function F(op, ks, stack), called directly: no std::function indirection and
  // no functor (what the per-key fallbacks that run on every call use).
  template <void (*F)(const OperatorHandle&, DispatchKeySet, Stack*)>
  static KernelFunction makeFromBoxedFunction() {
    return KernelFunction(nullptr, &BoxedFunction<F>::call, nullptr, nullptr);
  }
  // A fallback that may pass the call through unchanged (the Python key's: a dispatch mode whose
  // op.call(args) gets the very arguments it was given, or that says so in passes_through). F is
  // its boxed code; T its code for typed calls: for every op with a C++ signature the dispatcher
  // gives it an unboxed entry point that boxes the arguments once, in place and borrowed, and
  // hands T the means to run the typed call again with the original C++ arguments and to give it
  // its result, instead of checking, unboxing and reboxing them (dispatcher.h, forwarding_unboxed).
  template <void (*F)(const OperatorHandle&, DispatchKeySet, Stack*), ForwardedKernelFn T>
  static KernelFunction makeForwardingFallback() {
    KernelFunction k = makeFromBoxedFunction<F>();
    k.is_forwarding_ = true;
    k.forwarded_ = T;
    return k;
  }
  bool isForwarding() const { return is_forwarding_; }
  void* forwardingTrampoline() const { return forwarding_trampoline_; }
  // This fallback's entry in op entry's table, with the unboxed entry point for its signature.
  KernelFunction forwardingFor(const OperatorEntry* entry, void* unboxed, const std::type_info* sig) const {
    KernelFunction k = withUnboxed(unboxed, sig);
    k.functor_ = std::make_shared<ForwardingFallbackWithOp>(forwarded_, entry);
    return k;
  }
  // A boxed kernel with state: functor is passed back to fn on every call.
  static KernelFunction makeFromBoxedFunctor(std::shared_ptr<OperatorKernel> functor, BoxedKernelFn fn) {
    return KernelFunction(std::move(functor), fn, nullptr, nullptr);
  }
  // A stateful kernel with both entry points (e.g. the generic autograd kernel).
  template <class Sig>
  static KernelFunction makeFromFunctor(std::shared_ptr<OperatorKernel> functor, BoxedKernelFn boxed,
                                        void* unboxed) {
    return KernelFunction(std::move(functor), boxed, unboxed, &typeid(Sig));
  }

  // From a plain function: REMAT_FN(mm_cpu) or KernelFunction::makeFromUnboxedFunction<&mm_cpu>().
  // (Defined in dispatcher.h: it also instantiates the op's WrapperKernel entry point.)
  template <auto F>
  static KernelFunction makeFromUnboxedFunction();

  // A WrapperKernel: boxed now; the dispatcher adds the unboxed entry point once it knows the
  // op's C++ signature (from any unboxed kernel of the op).
  static KernelFunction makeFromWrapper(std::shared_ptr<WrapperKernel> kernel);
  bool isWrapper() const { return is_wrapper_; }
  void bindWrapperOp(const OperatorEntry* entry) const {
    static_cast<WrapperWithOp*>(functor_.get())->entry = entry;
  }
  void* wrapperTrampoline() const { return wrapper_trampoline_; }
  KernelFunction withUnboxed(void* unboxed, const std::type_info* sig) const {
    KernelFunction k = *this;
    k.unboxed_ = unboxed;
    k.signature_ = sig;
    return k;
  }

  void callBoxed(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) const {
    boxed_(functor_.get(), op, ks, stack);
  }

  // The typed fast path: calls the unboxed entry point directly when there is one, else boxes.
  template <class R, class... Args>
  R call(const OperatorHandle& op, DispatchKeySet ks, Args... args) const {
    if (__builtin_expect(unboxed_ != nullptr, 1)) {
      using Fn = R (*)(OperatorKernel*, DispatchKeySet, Args...);
      return reinterpret_cast<Fn>(unboxed_)(functor_.get(), ks, std::forward<Args>(args)...);
    }
    return callBoxedFromUnboxed<R, Args...>(op, ks, std::forward<Args>(args)...);
  }

 private:
  KernelFunction(std::shared_ptr<OperatorKernel> functor, BoxedKernelFn boxed, void* unboxed,
                 const std::type_info* sig)
      : functor_(std::move(functor)), boxed_(boxed), unboxed_(unboxed), signature_(sig) {}

  static void fallthrough_kernel(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack*);

  // call()'s rare branch (a kernel with no unboxed entry point), out of line so that call() itself
  // inlines into every typed dispatch.
  template <class R, class... Args>
  __attribute__((noinline)) R callBoxedFromUnboxed(const OperatorHandle& op, DispatchKeySet ks, Args... args) const {
    Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.push_back(detail::to_ivalue(args)), ...);
    boxed_(functor_.get(), op, ks, &stack);
    return detail::ReturnBoxing<R>::pop(stack);
  }

  template <void (*F)(const OperatorHandle&, DispatchKeySet, Stack*)>
  struct BoxedFunction {
    static void call(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* s) { F(op, ks, s); }
  };
  struct BoxedLambdaFunctor : OperatorKernel {
    explicit BoxedLambdaFunctor(BoxedLambda f) : fn(std::move(f)) {}
    static void call(OperatorKernel* self, const OperatorHandle& op, DispatchKeySet ks, Stack* s) {
      static_cast<BoxedLambdaFunctor*>(self)->fn(op, ks, s);
    }
    BoxedLambda fn;
  };

  std::shared_ptr<OperatorKernel> functor_;
  BoxedKernelFn boxed_ = nullptr;
  void* unboxed_ = nullptr;
  const std::type_info* signature_ = nullptr;
  bool is_wrapper_ = false;
  bool is_forwarding_ = false;
  ForwardedKernelFn forwarded_ = nullptr;  // a forwarding fallback's code for typed calls
  void* wrapper_trampoline_ = nullptr;     // unboxed WrapperKernel entry for this kernel's signature
  void* forwarding_trampoline_ = nullptr;  // unboxed forwarding-fallback entry for it
};

// REMAT_FN(f): the kernel for a plain C++ function, like TORCH_FN.
#define REMAT_FN(f) ::remat::KernelFunction::makeFromUnboxedFunction<&f>()

}  // namespace remat
