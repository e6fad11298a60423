// Mirrors torchgen's generated NativeMetaFunctions.h for Dropout.cpp's kernels (native_dropout,
// native_dropout_backward): their Defs (ops/structured.h: name, schema, C++ signature, meta
// function), so that each exists once, and what their kernels allocate besides the outputs,
// declared once as templates over a backend's copies: the CPU and CUDA kernels (ops/dropout.cpp,
// ops/cuda/dropout.cpp) run them with CPUCopies and CUDACopies, the Meta kernels with MetaCopies
// (ops/meta_copies.h) for the backend a dry run counts like. dropout is a composite
// (ops/dropout.cpp).
#pragma once

#include <cstdint>
#include <tuple>

#include "engine/core/generator.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

// Two outputs, (output, mask), allocated in that order. Its kernel runs on empty outputs too (the
// Def's runs_on_empty): each call reserves one generator offset, even when nothing is drawn.
struct structured_native_dropout {
  using Sig = std::tuple<Tensor, Tensor>(const Tensor&, double, Generator*);
  static constexpr const char* name = "aten::native_dropout";
  static constexpr const char* schema = "(Tensor input, float p, *, Generator? generator=None) -> (Tensor, Tensor)";
  static constexpr auto meta = &native_dropout_meta;
  static constexpr bool runs_on_empty = true;
  // out, mask = native_dropout(input, p): out = input * mask * scale, scale = 1 / (1 - p) (0 for p = 1)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return with_non_differentiable_outputs(rule({result(1, {0})}, [](C c) -> G {
      double p = c.scalar(1);
      return {native_dropout_backward(c.grad(0), c.result(1), p == 1.0 ? 0.0 : 1.0 / (1.0 - p))};
    }), {1});
  }
};
struct structured_native_dropout_backward {
  using Sig = Tensor(const Tensor&, const Tensor&, double);
  static constexpr const char* name = "aten::native_dropout_backward";
  static constexpr const char* schema = "(Tensor grad_output, Tensor mask, float scale) -> Tensor";
  static constexpr auto meta = &native_dropout_backward_meta;
  // out = grad_output * mask * scale
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(1, {0})}, [](C c) -> G {
      return {if_needed(c, 0, [&] { return native_dropout_backward(c.grad(), c.input(1), c.scalar(2)); }), Tensor()};
    });
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_dropout_def(const F& f) {
  f(structured::DefTag<structured_native_dropout>{});
  f(structured::DefTag<structured_native_dropout_backward>{});
}

// What native_dropout's kernel reads besides its outputs: the input contiguous (nothing for an
// empty input), on every backend.
template <class Copies>
Tensor dropout_input(const Tensor& input) {
  return input.numel() == 0 ? Tensor() : Copies::contiguous(input);
}

// What every backend's native_dropout kernel starts with: one Philox offset reserved per call
// (from `generator`, else the input device's default), even when nothing is drawn, the seed, and
// the input as the kernel reads it (dropout_input).
struct DropoutDraw {
  uint64_t offset, seed;
  Tensor x;
};
template <class Copies>
DropoutDraw dropout_draw(const Tensor& input, Generator* generator) {
  Generator& gen = generator != nullptr ? *generator : default_generator(input.device());
  const uint64_t offset = gen.reserve();
  const uint64_t seed = gen.seed();
  return {offset, seed, dropout_input<Copies>(input)};
}

// The backward's (its output is not empty): on the CPU the upstream gradient and the mask
// contiguous, in that order; CUDA reads both as they are (strided).
struct DropoutBackwardTemporaries {
  Tensor dy, mask;
};
template <class Copies, DeviceType kBackend>
DropoutBackwardTemporaries dropout_backward_temporaries(const Tensor& grad_output, const Tensor& mask) {
  DropoutBackwardTemporaries r;
  if constexpr (kBackend == kCPU) {
    r.dy = Copies::contiguous(grad_output);
    r.mask = Copies::contiguous(mask);
  }
  return r;
}

}  // namespace remat::ops
