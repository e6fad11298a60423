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
//     // only when the kernel must run on an empty output too (it checks indices, or draws):
//     static constexpr bool runs_on_empty = true;
//     // optional, the in-place schema's tags (uniform_: nondeterministic_seeded):
//     static constexpr Tag inplace_tags[] = {Tag::nondeterministic_seeded};
//     // optional, the op's derivative rule (derivatives.yaml's entry; ops/autograd/derivative_rules.h),
//     // registered under name; inplace_derivative(), the in-place variant's, under inplace_name:
//     //   out = sigmoid(self)
//     static autograd::Derivative derivative() {
//       using namespace autograd;
//       return rule({result(0, {0})}, [](C c) -> G { return {sigmoid_backward(c.grad(), c.result())}; });
//     }
//     // optional, the autocast kernel's cast (autocast_mode.cpp's lists: ops/autocast.h):
//     static constexpr CastPolicy autocast_policy = CastPolicy::Float32;
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
// counts like allocates, in the same order (an in-place variant: Temporaries(self, self, rest...)).
// An op of several outputs (native_dropout) has a Sig returning std::tuple<Tensor, ...> and a
// meta function returning one TensorMeta per output.
// An in-place variant bumps the version of every tensor its schema writes (Tensor(a!) self,
// Tensor(b!) exp_avg, ...: written_arguments), so that an op updating several tensors (the fused
// optimizers) needs no hand-written wrapper.
//
// A multi-output op (a tuple of tensors: the fused attention) whose kernels allocate their
// outputs with their temporaries is a Def whose meta function returns the op's geometry and which
// declares what its kernels allocate once, as a template over a backend's copies:
//     static constexpr auto meta = &flash_attention_meta;              // (op, args...) -> G
//     template <class Copies> static B buffers(const G&, args...);    // outputs and temporaries
//     static std::tuple<Tensor, ...> outputs(const B&);
// A backend gives one kernel, impl(op, g, buffers, args...), that fills the outputs;
// impl_buffered registers meta, buffers<Copies> and the kernel under a device guard of the first
// tensor argument (torchgen's device_guard), and impl_meta_buffered the same with MetaCopies and no
// kernel: a dry run allocates what the backend allocates by construction.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <tuple>
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

// Whether Def's kernel (and its Meta kernel's temporaries) run on empty outputs too: a Def with
// `static constexpr bool runs_on_empty = true` (its kernel checks indices, or advances a
// generator, whatever the outputs' size, and returns early itself). Otherwise nothing runs
// unless some output has elements.
template <class Def, class = void>
struct RunsOnEmpty : std::false_type {};
template <class Def>
struct RunsOnEmpty<Def, std::void_t<decltype(Def::runs_on_empty)>> : std::bool_constant<Def::runs_on_empty> {};
template <class Def, class... Outs>
bool runs_kernel(const Outs&... outs) {
  return RunsOnEmpty<Def>::value || ((outs.numel() > 0) || ...);
}
// Whether Def computes on complex tensors: a Def with `static constexpr bool supports_complex = true`
// (mul, the copies, conj_physical; or a specialization of SupportsComplex). Every other structured
// op refuses a complex argument, on every backend, before its meta function runs (refuse_complex).
template <class Def, class = void>
struct SupportsComplex : std::false_type {};
template <class Def>
struct SupportsComplex<Def, std::void_t<decltype(Def::supports_complex)>> : std::bool_constant<Def::supports_complex> {};

// "<op>: not implemented for 'ComplexFloat'" (PyTorch's phrase) for a complex Tensor argument.
[[noreturn]] void throw_complex_not_implemented(const char* op, ScalarType dtype);
template <class Def, class... Args>
void refuse_complex(const char* op, const Args&... args) {
  if constexpr (!SupportsComplex<Def>::value) {
    auto check = [op](const auto& a) {
      using A = std::decay_t<decltype(a)>;
      if constexpr (std::is_same_v<A, Tensor>) {
        if (a.defined() && isComplexType(a.dtype())) throw_complex_not_implemented(op, a.dtype());
      } else if constexpr (std::is_same_v<A, std::vector<Tensor>>) {
        for (const Tensor& t : a)
          if (t.defined() && isComplexType(t.dtype())) throw_complex_not_implemented(op, t.dtype());
      }
    };
    (check(args), ...);
  }
}

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

// Bit i set when the schema's argument i is written (an alias annotation with '!': "Tensor(a!)
// self", "Tensor(b!)? momentum_buffer"); the keyword-only marker '*' is not an argument.
constexpr uint64_t written_arguments(const char* schema) {
  uint64_t written = 0;
  int depth = 0, arg = 0;
  bool star = false, other = false;  // the argument so far: a '*', something else
  for (const char* p = schema; *p != '\0'; ++p) {
    const char c = *p;
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth == 0) break;  // the return type follows
    } else if (depth == 1 && c == ',') {
      if (other || !star) ++arg;
      star = other = false;
    } else if (c == '!') {
      written |= uint64_t{1} << arg;
    } else if (depth == 1 && c == '*' && !other) {
      star = true;
    } else if (c != ' ') {
      other = true;
    }
  }
  return written;
}

// The version bump of an in-place variant: self, then each other tensor the schema writes that is
// defined (an optional one may be None).
template <uint64_t kWritten, class... Rest>
void bump_written(const Tensor& self, const Rest&... rest) {
  self.impl()->bump_version();
  [[maybe_unused]] int i = 0;
  [[maybe_unused]] auto bump = [&](const auto& arg) {
    ++i;
    if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, Tensor>) {
      if (((kWritten >> i) & 1) != 0 && arg.defined()) arg.impl()->bump_version();
    }
  };
  (bump(rest), ...);
}

template <class Sig>
struct Variants;

template <class... Args>
struct Variants<Tensor(Args...)> {
  // out = op(args...): meta, allocate, kernel (nothing to compute for an empty output).
  template <class Def, class Backend, auto Impl>
  static Tensor functional(Args... args) {
    refuse_complex<Def>(Def::name, args...);
    const TensorMeta m = Def::meta(Def::name, args...);
    Tensor out = Backend::empty(m);
    if (runs_kernel<Def>(out)) Backend::run(out, [&] { Impl(Def::name, out, args...); });
    return out;
  }
  // self op= args...: the in-place checks, the same kernel with self as its output, a version bump.
  template <class Def, class Backend, auto Impl>
  static Tensor inplace(const Tensor& self, Args... rest) {
    refuse_complex<Def>(Def::inplace_name, self, rest...);
    Def::inplace_meta(Def::inplace_name, self, rest...);
    if (self.numel() > 0) Backend::run(self, [&] { Impl(Def::inplace_name, self, self, rest...); });
    bump_written<written_arguments(Def::inplace_schema)>(self, rest...);
    return self;
  }
  // The Meta kernels: the meta function alone (an output on Meta, or self with its version bumped).
  template <class Def, auto Temporaries>
  static Tensor meta_functional(Args... args) {
    refuse_complex<Def>(Def::name, args...);
    TensorMeta m = Def::meta(Def::name, args...);
    m.device = Device{kMeta};
    Tensor out = empty_from(m);
    if constexpr (!std::is_null_pointer_v<decltype(Temporaries)>) {
      if (runs_kernel<Def>(out)) Temporaries(out, args...);  // as the backend's kernel runs
    }
    return out;
  }
  template <class Def, auto Temporaries>
  static Tensor meta_inplace(const Tensor& self, Args... rest) {
    refuse_complex<Def>(Def::inplace_name, self, rest...);
    Def::inplace_meta(Def::inplace_name, self, rest...);
    if constexpr (!std::is_null_pointer_v<decltype(Temporaries)>) {
      if (self.numel() > 0) Temporaries(self, self, rest...);  // as the backend's kernel runs
    }
    bump_written<written_arguments(Def::inplace_schema)>(self, rest...);
    return self;
  }
};

// Ops of several outputs (native_dropout): Sig returns std::tuple<Tensor, ...>, the meta function
// a std::tuple of as many TensorMeta, in the outputs' order, and the outputs are allocated in that
// order. The kernel is impl(op, out0, out1, ..., args...); the Meta kernel's temporaries,
// Temporaries(out0, out1, ..., args...). Functional variants only.
template <class... Outs, class... Args>
struct Variants<std::tuple<Outs...>(Args...)> {
  template <class Def, class Backend, auto Impl>
  static std::tuple<Outs...> functional(Args... args) {
    refuse_complex<Def>(Def::name, args...);
    std::tuple<Outs...> outs =
        allocate(Def::meta(Def::name, args...), [](const TensorMeta& m) { return Backend::empty(m); });
    std::apply(
        [&](const auto&... o) {
          if (runs_kernel<Def>(o...)) Backend::run(std::get<0>(outs), [&] { Impl(Def::name, o..., args...); });
        },
        outs);
    return outs;
  }
  template <class Def, auto Temporaries>
  static std::tuple<Outs...> meta_functional(Args... args) {
    refuse_complex<Def>(Def::name, args...);
    std::tuple<Outs...> outs = allocate(Def::meta(Def::name, args...), [](TensorMeta m) {
      m.device = Device{kMeta};
      return empty_from(m);
    });
    if constexpr (!std::is_null_pointer_v<decltype(Temporaries)>) {
      std::apply(
          [&](const auto&... o) {
            if (runs_kernel<Def>(o...)) Temporaries(o..., args...);  // as the backend's kernel runs
          },
          outs);
    }
    return outs;
  }

 private:
  // make(meta) of each meta, first to last (a braced list is evaluated in order).
  template <class Metas, class Make>
  static std::tuple<Outs...> allocate(const Metas& metas, const Make& make) {
    return std::apply([&](const auto&... m) { return std::tuple<Outs...>{make(m)...}; }, metas);
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
// temporaries (an in-place variant's out is self), or nullptr for none.
template <class Def, auto Temporaries = nullptr>
void impl_meta(Library& m) {
  if constexpr (HasFunctional<Def>::value)
    m.impl(Def::name, KernelFunction::makeFromUnboxedFunction<
                          &Variants<typename Def::Sig>::template meta_functional<Def, Temporaries>>());
  if constexpr (HasInplace<Def>::value) {
    using V = typename InplaceVariants<typename Def::Sig>::V;
    m.impl(Def::inplace_name,
           KernelFunction::makeFromUnboxedFunction<&V::template meta_inplace<Def, Temporaries>>());
  }
}

// ---- multi-output ops whose kernels allocate by Def::buffers (see the top of this file) ----

// The first tensor among args (the one a backend's device guard is made of).
template <class A, class... Rest>
const Tensor& first_tensor(const A& a, const Rest&... rest) {
  if constexpr (std::is_same_v<A, Tensor>) {
    return a;
  } else {
    return first_tensor(rest...);
  }
}

template <class Sig>
struct BufferedVariants;
template <class R, class... Args>
struct BufferedVariants<R(Args...)> {
  // the meta function, then what the kernel allocates, then the kernel (none: the Meta kernel)
  template <class Def, class Backend, class Copies, auto Impl>
  static R functional(Args... args) {
    refuse_complex<Def>(Def::name, args...);
    const auto g = Def::meta(Def::name, args...);
    R outputs;
    Backend::run(first_tensor(args...), [&] {
      const auto buffers = Def::template buffers<Copies>(g, args...);
      if constexpr (!std::is_null_pointer_v<decltype(Impl)>) Impl(Def::name, g, buffers, args...);
      outputs = Def::outputs(buffers);
    });
    return outputs;
  }
};

// m.impl of the op for one backend: its kernel, allocating by Def::buffers<Copies>.
template <class Def, class Backend, class Copies, auto Impl>
void impl_buffered(Library& m) {
  m.impl(Def::name, KernelFunction::makeFromUnboxedFunction<
                        &BufferedVariants<typename Def::Sig>::template functional<Def, Backend, Copies, Impl>>());
}
// Its Meta kernel: the same with Copies = MetaCopies (ops/meta_copies.h) and no kernel.
template <class Def, class Copies>
void impl_meta_buffered(Library& m) {
  impl_buffered<Def, CPUBackend, Copies, nullptr>(m);
}

}  // namespace remat::ops::structured
