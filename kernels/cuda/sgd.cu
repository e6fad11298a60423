// Mirrors ATen/native/cuda/fused_sgd_impl.cu (_fused_sgd_kernel_cuda_), one tensor at a time.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/sgd.h"

namespace remat::kernels::cuda {

namespace {

// Rounded as written: the op sequence rounds every product and sum once.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

template <class A>
struct SGDConsts {  // the hyperparameters in A, each rounded once as the op sequence rounds it
  A sign, wd, mom, damp, neg_lr;
};

template <class T>
__global__ void sgd_kernel(T* param, const T* grad, T* buf, int64_t n, SGDConsts<acc_t<T>> k, bool decay,
                           bool first, bool nesterov) {
  using A = acc_t<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const A p = to_acc(param[i]);
    A d = mul_rn(to_acc(grad[i]), k.sign);
    if (decay) d = add_rn(d, mul_rn(p, k.wd));
    if (buf != nullptr) {
      A b = d;
      if (!first) b = add_rn(mul_rn(to_acc(buf[i]), k.mom), mul_rn(d, k.damp));
      buf[i] = convert<T>(b);
      d = nesterov ? add_rn(d, mul_rn(b, k.mom)) : b;
    }
    param[i] = convert<T>(add_rn(p, mul_rn(d, k.neg_lr)));
  }
}

}  // namespace

void sgd_step(ScalarType dtype, void* param, const void* grad, void* momentum_buffer, int64_t n,
              const SGDStep& s, cudaStream_t stream) {
  if (n == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "sgd_step", [&] {
    using A = acc_t<scalar_t>;
    const SGDConsts<A> k{s.maximize ? A(-1) : A(1), static_cast<A>(s.weight_decay), static_cast<A>(s.momentum),
                         static_cast<A>(1.0 - s.dampening), static_cast<A>(-s.lr)};
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(n)), kBlockSize, 0, stream, sgd_kernel<scalar_t>)(
        static_cast<scalar_t*>(param), static_cast<const scalar_t*>(grad), static_cast<scalar_t*>(momentum_buffer),
        n, k, s.weight_decay != 0, s.is_first_step, s.nesterov);
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
