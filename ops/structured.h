// Mirrors PyTorch's structured kernels: TORCH_META_FUNC (one meta function per op),
// TORCH_IMPL_FUNC (one out= kernel per backend) and the wrappers torchgen generates from them in
// RegisterCPU.cpp / RegisterMeta.cpp / RegisterCUDA.cpp (wrapper_CPU_sigmoid, wrapper_CPU_sigmoid_).
//
// An op is a Def (see ops/pointwise.def for the table the elementwise ops are made from):
//   struct Def {
//     using Sig = Tensor(const Tensor&);                   // the functional C++ signature
//     static constexpr const char* name = "aten::sigmoid"; // what errors and the dispatcher use
//     static constexpr const char* schema = "(Tensor self) -> Tensor";
//     static TensorMeta meta(const char* op, const Tensor& self);      // TORCH_META_FUNC
//     // only when the op has an in-place variant (self op= ...):
//     static constexpr const char* inplace_name = "aten::relu_";
//     static constexpr const char* inplace_schema = "(Tensor(a!) self) -> Tensor(a!)";
//     static void inplace_meta(const char* op, const Tensor& self);
//     // optional, the in-place schema's tags (uniform_: nondeterministic_seeded):
//     static constexpr Tag inplace_tags[] = {Tag::nondeterministic_seeded};
//   };
// An op with an in-place variant alone (addcmul_) has no name, schema or meta; its Sig is still
// the functional one's, self first.
// A backend gives one kernel, impl(op, out, args...), that writes into an output of the meta's
// geometry (TORCH_IMPL_FUNC); the functional variant allocates that output, the in-place one
// passes self. So the meta function runs once per call, in the wrapper, under the name the Def
// gives, and every backend and variant runs the same checks.
// A backend's temporaries (the GEMM's operand copies: ops/gemm_copies.h) are declared once, in a
// function both its kernel and the Meta kernel read; impl_meta<Def, Temporaries> runs
// Temporaries(out, args...) after the output, so that a dry run allocates what the backend it
// counts like allocates, in the same order.
#pragma once

#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/dispatch/library.h"
#include "ops/op_utils.h"

namespace remat::ops::structured {

// A Def as a value, for the for_each_*_def functions that walk a family's Defs.
template <class Def>
struct DefTag {
  using type = Def;
};

// Whether Def has a functional variant (a name member; addcmul_ has none) and an in-place one
// (an inplace_name member).
template <class Def, class = void>
struct HasFunctional : std::false_type {};
template <class Def>
struct HasFunctional<Def, std::void_t<decltype(Def::name)>> : std::true_type {};

template <class Def, class = void>
struct HasInplace : std::false_type {};
template <class Def>
struct HasInplace<Def, std::void_t<decltype(Def::inplace_name)>> : std::true_type {};

template <class Def, class = void>
struct HasInplaceTags : std::false_type {};
template <class Def>
struct HasInplaceTags<Def, std::void_t<decltype(Def::inplace_tags)>> : std::true_type {};

// How the CPU backend allocates an output and runs a kernel (CUDA's is in ops/cuda/cuda_utils.h:
// the same, under a device guard).
struct CPUBackend {
  static Tensor empty(const TensorMeta& m) { return empty_from(m); }
  template <class F>
  static void run(const Tensor&, const F& kernel) { kernel(); }
};

template <class Sig>
struct Variants;

template <class... Args>
struct Variants<Tensor(Args...)> {
  // out = op(args...): meta, allocate, kernel (nothing to compute for an empty output).
  template <class Def, class Backend, auto Impl>
  static Tensor functional(Args... args) {
    const TensorMeta m = Def::meta(Def::name, args...);
    Tensor out = Backend::empty(m);
    if (out.numel() > 0) Backend::run(out, [&] { Impl(Def::name, out, args...); });
    return out;
  }
  // self op= args...: the in-place checks, the same kernel with self as its output, a version bump.
  template <class Def, class Backend, auto Impl>
  static Tensor inplace(const Tensor& self, Args... rest) {
    Def::inplace_meta(Def::inplace_name, self, rest...);
    if (self.numel() > 0) Backend::run(self, [&] { Impl(Def::inplace_name, self, self, rest...); });
    self.impl()->bump_version();
    return self;
  }
  // The Meta kernels: the meta function alone (an output on Meta, or self with its version bumped).
  template <class Def, auto Temporaries>
  static Tensor meta_functional(Args... args) {
    TensorMeta m = Def::meta(Def::name, args...);
    m.device = Device{kMeta};
    Tensor out = empty_from(m);
    if constexpr (!std::is_null_pointer_v<decltype(Temporaries)>) {
      if (out.numel() > 0) Temporaries(out, args...);  // as the backend's kernel runs
    }
    return out;
  }
  template <class Def>
  static Tensor meta_inplace(const Tensor& self, Args... rest) {
    Def::inplace_meta(Def::inplace_name, self, rest...);
    self.impl()->bump_version();
    return self;
  }
};

// The in-place signature: the functional one, whose first argument is self.
template <class Sig>
struct InplaceVariants;
template <class... Rest>
struct InplaceVariants<Tensor(const Tensor&, Rest...)> {
  using V = Variants<Tensor(Rest...)>;
};

// m.def of the op's schemas (the in-place one carries no tags, as in native_functions.yaml,
// unless its Def gives inplace_tags).
template <class Def>
void define(Library& m, std::vector<Tag> tags) {
  if constexpr (HasFunctional<Def>::value) m.def(std::string(Def::name) + Def::schema, std::move(tags));
  if constexpr (HasInplaceTags<Def>::value) {
    m.def(std::string(Def::inplace_name) + Def::inplace_schema,
          std::vector<Tag>(std::begin(Def::inplace_tags), std::end(Def::inplace_tags)));
  } else if constexpr (HasInplace<Def>::value) {
    m.def(std::string(Def::inplace_name) + Def::inplace_schema);
  }
}

// m.impl of the op's variants for one backend, all from its one kernel.
template <class Def, class Backend, auto Impl>
void impl(Library& m) {
  if constexpr (HasFunctional<Def>::value)
    m.impl(Def::name, KernelFunction::makeFromUnboxedFunction<
                          &Variants<typename Def::Sig>::template functional<Def, Backend, Impl>>());
  if constexpr (HasInplace<Def>::value) {
    using V = typename InplaceVariants<typename Def::Sig>::V;
    m.impl(Def::inplace_name, KernelFunction::makeFromUnboxedFunction<&V::template inplace<Def, Backend, Impl>>());
  }
}

// Temporaries: void(const Tensor& out, args...), the Meta allocations of the imitated backend's
// temporaries (functional variants only), or nullptr for none.
template <class Def, auto Temporaries = nullptr>
void impl_meta(Library& m) {
  if constexpr (HasFunctional<Def>::value)
    m.impl(Def::name, KernelFunction::makeFromUnboxedFunction<
                          &Variants<typename Def::Sig>::template meta_functional<Def, Temporaries>>());
  if constexpr (HasInplace<Def>::value) {
    using V = typename InplaceVariants<typename Def::Sig>::V;
    m.impl(Def::inplace_name, KernelFunction::makeFromUnboxedFunction<&V::template meta_inplace<Def>>());
  }
}

}  // namespace remat::ops::structured
