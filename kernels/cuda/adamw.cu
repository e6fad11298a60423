// Mirrors ATen/native/cuda/fused_adamw_impl.cu (_fused_adamw_kernel_cuda_), one tensor at a time.
#include <cmath>

#include "kernels/cuda/adamw.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/common.cuh"

namespace remat::kernels::cuda {

namespace {

template <class T>
__global__ void adamw_kernel(T* param, const T* grad, acc_t<T>* m, acc_t<T>* v, int64_t n, acc_t<T> lr,
                             acc_t<T> beta1, acc_t<T> beta2, acc_t<T> eps, acc_t<T> decay, acc_t<T> step_size,
                             acc_t<T> inv_sqrt_bc2) {
  using A = acc_t<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    A p = to_acc(param[i]);
    const A g = to_acc(grad[i]);
    p *= A(1) - lr * decay;
    const A mi = beta1 * m[i] + (A(1) - beta1) * g;
    const A vi = beta2 * v[i] + (A(1) - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p -= step_size * mi / (m_sqrt(vi) * inv_sqrt_bc2 + eps);
    param[i] = convert<T>(p);
  }
}

}  // namespace

void adamw_step(ScalarType dtype, void* param, const void* grad, void* exp_avg, void* exp_avg_sq, int64_t n,
                double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step,
                cudaStream_t stream) {
  REMAT_CHECK(step >= 1, "adamw_step: step counts from 1 (got ", step, ")");
  if (n == 0) return;
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "adamw_step", [&] {
    using A = acc_t<scalar_t>;
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(n)), kBlockSize, 0, stream, adamw_kernel<scalar_t>)(
        static_cast<scalar_t*>(param), static_cast<const scalar_t*>(grad), static_cast<A*>(exp_avg),
        static_cast<A*>(exp_avg_sq), n, static_cast<A>(lr), static_cast<A>(beta1), static_cast<A>(beta2),
        static_cast<A>(eps), static_cast<A>(weight_decay), static_cast<A>(lr / bc1),
        static_cast<A>(1.0 / std::sqrt(bc2)));
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
