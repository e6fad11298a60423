// The normalization kernels' course, the same on every backend, and their one registration (no
// PyTorch counterpart as one file: layer_norm_kernel.cpp and .cu each check, allocate and launch).
// Each kernel runs its Def's meta function, then under the backend's device guard allocates by
// ops/norm_buffers.h, runs the backend's loop over those buffers, and returns the outputs.
// ops/normalization.cpp (CPU) and ops/cuda/normalization.cpp (CUDA) each give a NormOps:
//   using Backend = structured::CPUBackend (or CUDABackend);  // the device guard (ops/structured.h)
//   using Copies = CPUCopies (or CUDACopies);                 // what the buffers are made with
//   static constexpr DeviceType kDevice = kCPU (or kCUDA);    // norm_backward_buffers' backend
//   static void layer_norm(const NormGeometry&, const NormForwardBuffers&, double eps);
//   static void layer_norm_backward(const NormGeometry&, const NormBackwardBuffers&);
//   static void rms_norm(const NormGeometry&, const NormForwardBuffers&, double eps);
//   static void rms_norm_backward(const NormGeometry&, const NormBackwardBuffers&);
// The Meta kernels (ops/normalization.cpp) run the same buffers with MetaCopies and no loop.
#pragma once

#include <tuple>

#include "engine/dispatch/library.h"
#include "ops/norm_buffers.h"
#include "ops/normalization_defs.h"
#include "ops/structured.h"

namespace remat::ops {

template <class NormOps>
struct NormKernels {
  using Copies = typename NormOps::Copies;
  using LayerNorm = structured_native_layer_norm;
  using LayerNormBackward = structured_native_layer_norm_backward;
  using RmsNorm = structured__fused_rms_norm;
  using RmsNormBackward = structured__fused_rms_norm_backward;

  static std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& input, const Shape& normalized_shape,
                                                       const Tensor& weight, const Tensor& bias, double eps) {
    const NormGeometry g = LayerNorm::meta(LayerNorm::name, input, normalized_shape, weight, bias, eps);
    NormForwardBuffers r;
    std::tuple<Tensor, Tensor> stats;
    NormOps::Backend::run(input, [&] {
      r = norm_forward_buffers<Copies>(g, input, weight, bias, true);
      NormOps::layer_norm(g, r, eps);
      stats = layer_norm_returned_stats<Copies, NormOps::kDevice>(r, input, weight, bias);
    });
    return {r.out, std::get<0>(stats), std::get<1>(stats)};
  }

  static std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                                const Shape& normalized_shape, const Tensor& mean,
                                                                const Tensor& rstd, const Tensor& weight,
                                                                const Tensor& bias) {
    const NormGeometry g =
        LayerNormBackward::meta(LayerNormBackward::name, grad_out, input, normalized_shape, mean, rstd, weight, bias);
    std::tuple<Tensor, Tensor, Tensor> outputs;
    NormOps::Backend::run(input, [&] {
      const NormBackwardBuffers r = norm_backward_buffers<Copies, NormOps::kDevice>(g, grad_out, input, normalized_shape,
                                                                                    mean, rstd, weight, bias);
      NormOps::layer_norm_backward(g, r);
      outputs = norm_backward_outputs<Copies>(r, weight, bias);
    });
    return outputs;
  }

  static std::tuple<Tensor, Tensor> rms_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                                             double eps) {
    const NormGeometry g = RmsNorm::meta(RmsNorm::name, input, normalized_shape, weight, eps);
    NormForwardBuffers r;
    NormOps::Backend::run(input, [&] {
      r = norm_forward_buffers<Copies>(g, input, weight, Tensor(), false);
      NormOps::rms_norm(g, r, eps);
    });
    return {r.out, r.rstd};
  }

  static std::tuple<Tensor, Tensor> rms_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                      const Shape& normalized_shape, const Tensor& rstd,
                                                      const Tensor& weight) {
    const NormGeometry g =
        RmsNormBackward::meta(RmsNormBackward::name, grad_out, input, normalized_shape, rstd, weight);
    std::tuple<Tensor, Tensor> outputs;
    NormOps::Backend::run(input, [&] {
      const NormBackwardBuffers r = norm_backward_buffers<Copies, NormOps::kDevice>(
          g, grad_out, input, normalized_shape, Tensor(), rstd, weight, Tensor());
      NormOps::rms_norm_backward(g, r);
      auto [grad_input, grad_weight, unused] = norm_backward_outputs<Copies>(r, weight, Tensor());
      outputs = {grad_input, grad_weight};
    });
    return outputs;
  }
};

// The four kernels of one backend, by the Defs' names.
template <class NormOps>
void impl_norm_kernels(Library& m) {
  using K = NormKernels<NormOps>;
  m.impl(K::LayerNorm::name, REMAT_FN(K::layer_norm));
  m.impl(K::LayerNormBackward::name, REMAT_FN(K::layer_norm_backward));
  m.impl(K::RmsNorm::name, REMAT_FN(K::rms_norm));
  m.impl(K::RmsNormBackward::name, REMAT_FN(K::rms_norm_backward));
}

}  // namespace remat::ops
