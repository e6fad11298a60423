// Mirrors ATen/native/cuda/layer_norm_kernel.cu registration (native_layer_norm,
// native_layer_norm_backward) and the fused RMSNorm ops (_fused_rms_norm, _fused_rms_norm_backward)
// on CUDA, with their Defs' meta functions (ops/normalization_defs.h); every kernel allocates by
// ops/norm_buffers.h (the template the Meta kernels imitating CUDA run too): mean and rstd have
// the statistic dtype (float for 16-bit inputs); weight and bias are used in that dtype (so a
// BFloat16 input may have Float weights), and their gradients are returned in each parameter's
// own dtype.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/normalization.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"
#include "ops/norm_kernels.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// CUDA's kernels (kernels/cuda/normalization.h) over the buffers, on the current stream of the
// input's device (ops/norm_kernels.h's kernels run them under its guard).
struct CUDANormOps {
  using Backend = structured::CUDABackend;
  using Copies = CUDACopies;
  static constexpr DeviceType kDevice = kCUDA;

  static void layer_norm(const NormGeometry& g, const NormForwardBuffers& r, double eps) {
    kc::layer_norm_forward(r.x.dtype(), r.x.data_ptr(), ptr_or_null(r.w), ptr_or_null(r.b), r.out.data_ptr(),
                           r.mean.data_ptr(), r.rstd.data_ptr(), g.M, g.N, eps, cuda_stream(r.x.device()));
  }
  static void layer_norm_backward(const NormGeometry& g, const NormBackwardBuffers& r) {
    kc::layer_norm_backward(r.x.dtype(), r.dy.data_ptr(), r.x.data_ptr(), r.mu.data_ptr(), r.r.data_ptr(),
                            ptr_or_null(r.w), r.grad_input.data_ptr(), ptr_or_null(r.grad_weight_acc),
                            ptr_or_null(r.grad_bias_acc), g.M, g.N, ptr_or_null(r.workspace),
                            cuda_stream(r.x.device()));
  }
  static void rms_norm(const NormGeometry& g, const NormForwardBuffers& r, double eps) {
    kc::rms_norm_forward(r.x.dtype(), r.x.data_ptr(), ptr_or_null(r.w), r.out.data_ptr(), r.rstd.data_ptr(), g.M,
                         g.N, eps, cuda_stream(r.x.device()));
  }
  static void rms_norm_backward(const NormGeometry& g, const NormBackwardBuffers& r) {
    kc::rms_norm_backward(r.x.dtype(), r.dy.data_ptr(), r.x.data_ptr(), r.r.data_ptr(), ptr_or_null(r.w),
                          r.grad_input.data_ptr(), ptr_or_null(r.grad_weight_acc), g.M, g.N,
                          ptr_or_null(r.workspace), cuda_stream(r.x.device()));
  }
};

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) { impl_norm_kernels<CUDANormOps>(m); }

}  // namespace remat::ops
