// Mirrors ATen/native/layer_norm.cpp (native_layer_norm, native_layer_norm_backward, layer_norm)
// and the fused RMSNorm ops (_fused_rms_norm, _fused_rms_norm_backward, rms_norm): their meta
// functions, CPU kernels and Meta kernels, the schemas from their Defs (ops/normalization_defs.h);
// every kernel allocates by ops/norm_buffers.h. The loops are in kernels/cpu/norm.h.
//
// mean and rstd have the input's leading dims followed by size-1 normalised dims, as PyTorch's,
// and are float32 for a BFloat16/Half input (float64 for float64). Parameters are cast to that
// statistic dtype before the kernel runs, so a BFloat16 input may have Float weights (PyTorch's
// "mixed type" layer norm).
#include <string>
#include <tuple>

#include "engine/dispatch/library.h"
#include "kernels/cpu/norm.h"
#include "ops/composite.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/functions.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"
#include "ops/norm_kernels.h"
#include "ops/meta_copies.h"
#include "ops/norm_buffers.h"
#include "ops/normalization_defs.h"
#include "ops/op_utils.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

ScalarType stat_dtype_for(ScalarType input) { return input == kDouble ? kDouble : kFloat; }

namespace {

// "[*, 3, 4]": any leading dims, then normalized_shape (PyTorch's wording).
std::string star_shape(const Shape& normalized_shape) {
  std::string s = "[*";
  for (int64_t d : normalized_shape) s += ", " + std::to_string(d);
  return s + "]";
}

}  // namespace

NormGeometry norm_geometry(const char* op, const Tensor& input, const Shape& normalized_shape) {
  check_defined(op, input, "input");
  check_floating(op, input, "input");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  REMAT_CHECK(k >= 1, op,
              ": Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
              "but got normalized_shape = ",
              normalized_shape);
  bool matches = input.dim() >= k;
  for (int64_t i = 0; matches && i < k; ++i) matches = input.sizes()[input.dim() - k + i] == normalized_shape[i];
  REMAT_CHECK(matches, op, ": Given normalized_shape=", normalized_shape, ", expected input with shape ",
              star_shape(normalized_shape), ", but got input of size", input.sizes());
  NormGeometry g;
  const size_t lead = static_cast<size_t>(input.dim() - k);
  g.M = prod(input.sizes(), 0, lead);
  g.N = prod(normalized_shape, 0, normalized_shape.size());
  g.stat_shape.assign(input.sizes().begin(), input.sizes().begin() + static_cast<std::ptrdiff_t>(lead));
  g.stat_shape.resize(static_cast<size_t>(input.dim()), 1);
  g.stat_dtype = stat_dtype_for(input.dtype());
  return g;
}

namespace {

// weight/bias: normalized_shape, on the input's device, the input's dtype or (mixed) Float.
void check_param(const char* op, const Tensor& input, const Tensor& param, const char* name,
                 const Shape& normalized_shape) {
  if (!param.defined()) return;
  REMAT_CHECK(param.sizes() == normalized_shape, op, ": Expected ", name,
              " to be of same shape as normalized_shape, but got ", name, " of shape ", param.sizes(),
              " and normalized_shape = ", normalized_shape);
  common_device(op, {&input, &param});
  REMAT_CHECK(param.dtype() == input.dtype() ||
                  (param.dtype() == kFloat && (input.dtype() == kBFloat16 || input.dtype() == kHalf)),
              op, ": expected ", name, " to have dtype ", toString(input.dtype()),
              " (the input's; Float is also accepted for a BFloat16/Half input), but got ", toString(param.dtype()));
}

// The statistics mean/rstd handed to a backward: numel M and floating; their dtype is converted.
void check_stat(const char* op, const Tensor& stat, const char* name, const NormGeometry& g, const Tensor& input) {
  check_defined(op, stat, name);
  check_floating(op, stat, name);
  common_device(op, {&input, &stat});
  REMAT_CHECK(stat.numel() == g.M, op, ": expected ", name, " to have ", g.M, " elements (one per normalised row of ",
              "the input), but got shape ", stat.sizes());
}

void check_grad_out(const char* op, const Tensor& grad_out, const Tensor& input) {
  check_defined(op, grad_out, "grad_out");
  common_device(op, {&grad_out, &input});
  REMAT_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of shape ", grad_out.sizes(),
              " does not match input of shape ", input.sizes());
  check_same_dtype(op, grad_out, input);
}

}  // namespace

NormGeometry layer_norm_meta(const char* op, const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                             const Tensor& bias, double) {
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_param(op, input, weight, "weight", normalized_shape);
  check_param(op, input, bias, "bias", normalized_shape);
  return g;
}

NormGeometry layer_norm_backward_meta(const char* op, const Tensor& grad_out, const Tensor& input,
                                      const Shape& normalized_shape, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight, const Tensor& bias) {
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_grad_out(op, grad_out, input);
  check_stat(op, mean, "mean", g, input);
  check_stat(op, rstd, "rstd", g, input);
  check_param(op, input, weight, "weight", normalized_shape);
  check_param(op, input, bias, "bias", normalized_shape);
  return g;
}

NormGeometry rms_norm_meta(const char* op, const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                           double) {
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_param(op, input, weight, "weight", normalized_shape);
  return g;
}

NormGeometry rms_norm_backward_meta(const char* op, const Tensor& grad_out, const Tensor& input,
                                    const Shape& normalized_shape, const Tensor& rstd, const Tensor& weight) {
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_grad_out(op, grad_out, input);
  check_stat(op, rstd, "rstd", g, input);
  check_param(op, input, weight, "weight", normalized_shape);
  return g;
}

namespace {

namespace cpu = kernels::cpu;

template <class A>
A* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<A>() : nullptr;
}

using LayerNorm = structured_native_layer_norm;
using LayerNormBackward = structured_native_layer_norm_backward;
using RmsNorm = structured__fused_rms_norm;
using RmsNormBackward = structured__fused_rms_norm_backward;

// ---------------------------------------------------------------------------------------------
// the CPU's loops (kernels/cpu/norm.h) over the buffers; the kernels around them are
// ops/norm_kernels.h's
// ---------------------------------------------------------------------------------------------

struct CPUNormOps {
  using Backend = structured::CPUBackend;
  using Copies = CPUCopies;
  static constexpr DeviceType kDevice = kCPU;

  static void layer_norm(const NormGeometry& g, const NormForwardBuffers& r, double eps) {
    REMAT_DISPATCH_FLOATING_TYPES(r.x.dtype(), LayerNorm::name, [&] {
      using A = cpu::acc_t<scalar_t>;
      cpu::layer_norm_forward<scalar_t>(r.out.data_ptr<scalar_t>(), r.mean.data_ptr<A>(), r.rstd.data_ptr<A>(),
                                        r.x.data_ptr<scalar_t>(), ptr_or_null<A>(r.w), ptr_or_null<A>(r.b), g.M,
                                        g.N, eps);
    });
  }
  static void layer_norm_backward(const NormGeometry& g, const NormBackwardBuffers& r) {
    REMAT_DISPATCH_FLOATING_TYPES(r.x.dtype(), LayerNormBackward::name, [&] {
      using A = cpu::acc_t<scalar_t>;
      cpu::layer_norm_backward<scalar_t>(r.grad_input.data_ptr<scalar_t>(), ptr_or_null<A>(r.grad_weight_acc),
                                         ptr_or_null<A>(r.grad_bias_acc), r.dy.data_ptr<scalar_t>(),
                                         r.x.data_ptr<scalar_t>(), r.mu.data_ptr<A>(), r.r.data_ptr<A>(),
                                         ptr_or_null<A>(r.w), g.M, g.N);
    });
  }
  static void rms_norm(const NormGeometry& g, const NormForwardBuffers& r, double eps) {
    REMAT_DISPATCH_FLOATING_TYPES(r.x.dtype(), RmsNorm::name, [&] {
      using A = cpu::acc_t<scalar_t>;
      cpu::rms_norm_forward<scalar_t>(r.out.data_ptr<scalar_t>(), r.rstd.data_ptr<A>(), r.x.data_ptr<scalar_t>(),
                                      ptr_or_null<A>(r.w), g.M, g.N, eps);
    });
  }
  static void rms_norm_backward(const NormGeometry& g, const NormBackwardBuffers& r) {
    REMAT_DISPATCH_FLOATING_TYPES(r.x.dtype(), RmsNormBackward::name, [&] {
      using A = cpu::acc_t<scalar_t>;
      cpu::rms_norm_backward<scalar_t>(r.grad_input.data_ptr<scalar_t>(), ptr_or_null<A>(r.grad_weight_acc),
                                       r.dy.data_ptr<scalar_t>(), r.x.data_ptr<scalar_t>(), r.r.data_ptr<A>(),
                                       ptr_or_null<A>(r.w), g.M, g.N);
    });
  }
};

Tensor layer_norm_composite(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                            const Tensor& bias, double eps) {
  return std::get<0>(native_layer_norm(input, normalized_shape, weight, bias, eps));
}

// layer_norm.cpp's rms_norm_composite (_fused_rms_norm's CompositeImplicitAutograd kernel): in the
// input's opmath dtype (Float for BFloat16/Half), rsqrt(pow(x, 2).mean(dims, keepdim).add_(eps)),
// x times it, times weight, cast back (type_as). Each step is an op of its own, recorded by
// autograd and seen by a dispatch mode, as PyTorch runs it.
Tensor rms_norm_decomposed(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, double eps) {
  Shape dims;
  for (size_t i = 0; i < normalized_shape.size(); ++i) dims.push_back(input.dim() - 1 - static_cast<int64_t>(i));
  const ScalarType opmath = stat_dtype_for(input.dtype());
  const Tensor upcast = input.to(opmath);  // no op for Float and Double
  // eps as the opmath type holds it (PyTorch's `float eps_val` for Float)
  const double e = opmath == kFloat ? static_cast<double>(static_cast<float>(eps)) : eps;
  Tensor ms = mean(pow(upcast, 2.0), dims, /*keepdim=*/true);
  add_(ms, e);
  const Tensor rstd = rsqrt(ms);
  Tensor out = mul(upcast, rstd);
  if (weight.defined()) out = mul(out, weight);
  return out.contiguous().to(input.dtype());
}

// layer_norm.cpp's rms_norm_symint: _fused_rms_norm, except where PyTorch 2.15 runs the composite.
// _fused_rms_norm has its own kernel on CUDA alone (native_functions.yaml: CUDA, MPS, XPU, else
// CompositeImplicitAutograd), so on the CPU, and on a Meta dry run counting like the CPU, it is the
// composite; also when the weight's dtype is not the input's (PyTorch's "Can not dispatch to fused
// implementation"). A Meta dry run counting like CUDA runs the fused op, as CUDA does.
Tensor rms_norm_composite(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, double eps) {
  RmsNorm::meta("aten::rms_norm", input, normalized_shape, weight, eps);  // _check_rms_norm_inputs
  const bool fused = input.device().is_cuda() || (input.is_meta() && cuda_temporaries::imitating());
  if (!fused || (weight.defined() && weight.dtype() != input.dtype()))
    return rms_norm_decomposed(input, normalized_shape, weight, eps);
  return std::get<0>(_fused_rms_norm(input, normalized_shape, weight, eps));
}

// ---------------------------------------------------------------------------------------------
// the Meta kernels: the meta function, then what the backend the dry run counts like allocates
// ---------------------------------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_meta(const Tensor& input, const Shape& normalized_shape,
                                                          const Tensor& weight, const Tensor& bias, double eps) {
  const NormGeometry g = LayerNorm::meta(LayerNorm::name, input, normalized_shape, weight, bias, eps);
  const NormForwardBuffers r = norm_forward_buffers<MetaCopies>(g, input, weight, bias, true);  // CPU's, CUDA's
  const auto [mean, rstd] = cuda_temporaries::imitating()
                                ? layer_norm_returned_stats<MetaCopies, kCUDA>(r, input, weight, bias)
                                : layer_norm_returned_stats<MetaCopies, kCPU>(r, input, weight, bias);
  return {r.out, mean, rstd};
}

// NormBackwardBuffers of the backend the dry run counts like, then the outputs.
std::tuple<Tensor, Tensor, Tensor> norm_backward_meta(const NormGeometry& g, const Tensor& grad_out,
                                                      const Tensor& input, const Shape& normalized_shape,
                                                      const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                                                      const Tensor& bias) {
  const NormBackwardBuffers r =
      cuda_temporaries::imitating()
          ? norm_backward_buffers<MetaCopies, kCUDA>(g, grad_out, input, normalized_shape, mean, rstd, weight, bias)
          : norm_backward_buffers<MetaCopies, kCPU>(g, grad_out, input, normalized_shape, mean, rstd, weight, bias);
  return norm_backward_outputs<MetaCopies>(r, weight, bias);
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_meta(const Tensor& grad_out, const Tensor& input,
                                                                   const Shape& normalized_shape, const Tensor& mean,
                                                                   const Tensor& rstd, const Tensor& weight,
                                                                   const Tensor& bias) {
  const NormGeometry g =
      LayerNormBackward::meta(LayerNormBackward::name, grad_out, input, normalized_shape, mean, rstd, weight, bias);
  return norm_backward_meta(g, grad_out, input, normalized_shape, mean, rstd, weight, bias);
}

std::tuple<Tensor, Tensor> fused_rms_norm_meta(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                                               double eps) {
  const NormGeometry g = RmsNorm::meta(RmsNorm::name, input, normalized_shape, weight, eps);
  const NormForwardBuffers r = norm_forward_buffers<MetaCopies>(g, input, weight, Tensor(), false);
  return {r.out, r.rstd};
}

std::tuple<Tensor, Tensor> fused_rms_norm_backward_meta(const Tensor& grad_out, const Tensor& input,
                                                        const Shape& normalized_shape, const Tensor& rstd,
                                                        const Tensor& weight) {
  const NormGeometry g = RmsNormBackward::meta(RmsNormBackward::name, grad_out, input, normalized_shape, rstd, weight);
  auto [grad_input, grad_weight, unused] =
      norm_backward_meta(g, grad_out, input, normalized_shape, Tensor(), rstd, weight, Tensor());
  return {grad_input, grad_weight};
}

}  // namespace

// The schemas from the Defs (ops/normalization_defs.h); each backend's kernels by the Defs' names.
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_normalization_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, CPU, m) { impl_norm_kernels<CPUNormOps>(m); }
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl(LayerNorm::name, REMAT_FN(native_layer_norm_meta));
  m.impl(LayerNormBackward::name, REMAT_FN(native_layer_norm_backward_meta));
  m.impl(RmsNorm::name, REMAT_FN(fused_rms_norm_meta));
  m.impl(RmsNormBackward::name, REMAT_FN(fused_rms_norm_backward_meta));
}
REMAT_LIBRARY_FRAGMENT(aten, m) {
  impl_composite(m, "layer_norm", REMAT_FN(layer_norm_composite));
  impl_composite(m, "rms_norm", REMAT_FN(rms_norm_composite));
}

}  // namespace remat::ops
