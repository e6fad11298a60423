// Mirrors ATen/native/cuda/DistributionTemplates.h and Dropout.cu: each thread draws one
// Philox block (four 32-bit words) and uses the words the rule assigns to its elements.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/random.h"
#include "kernels/philox.h"

namespace remat::kernels::cuda {

namespace {

// Thread b owns Philox block b: elements 4b .. 4b+3 (uniform, dropout) or 2b, 2b+1 (normal).
template <class T>
__global__ void uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double from, double to) {
  const int64_t nblocks = (n + 3) / 4, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < nblocks; b += stride) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(b), offset, seed);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const int64_t i = 4 * b + w;
      // __dadd_rn/__dmul_rn: no fused multiply-add, so the double rounds as the CPU's does
      if (i < n) {
        const double u = static_cast<double>(uint32_to_uniform(r.x[w]));
        out[i] = convert<T>(__dadd_rn(from, __dmul_rn(to - from, u)));
      }
    }
  }
}

template <class T>
__global__ void normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std) {
  const int64_t nblocks = (n + 1) / 2, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < nblocks; b += stride) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(b), offset, seed);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t i = 2 * b + h;
      if (i >= n) break;
      const float u1 = 1.0f - uint32_to_uniform(r.x[2 * h]);  // (0, 1]: log stays finite
      const float u2 = uint32_to_uniform(r.x[2 * h + 1]);
      const float z = __fmul_rn(sqrtf(__fmul_rn(-2.0f, logf(u1))), cosf(__fmul_rn(6.2831853071795864f, u2)));
      out[i] = convert<T>(__dadd_rn(mean, __dmul_rn(std, static_cast<double>(z))));
    }
  }
}

template <class T>
__global__ void dropout_kernel(const T* x, T* out, bool* mask, int64_t n, uint64_t seed, uint64_t offset, float keep,
                               acc_t<T> scale) {
  const int64_t nblocks = (n + 3) / 4, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < nblocks; b += stride) {
    const Philox4 r = philox4x32_10(static_cast<uint64_t>(b), offset, seed);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const int64_t i = 4 * b + w;
      if (i >= n) break;
      const bool m = uint32_to_uniform(r.x[w]) < keep;
      mask[i] = m;
      // x * (m ? scale : 0), as the CPU's masked_scale: a dropped negative input gives -0, not +0.
      if (out != nullptr) out[i] = convert<T>(to_acc(x[i]) * (m ? scale : acc_t<T>(0)));
    }
  }
}

}  // namespace

void uniform(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double from, double to,
             cudaStream_t stream) {
  if (n == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::uniform_", [&] {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size((n + 3) / 4)), kBlockSize, 0, stream, uniform_kernel<scalar_t>)(
        static_cast<scalar_t*>(out), n, seed, offset, from, to);
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void normal(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
            cudaStream_t stream) {
  if (n == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::normal_", [&] {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size((n + 1) / 2)), kBlockSize, 0, stream, normal_kernel<scalar_t>)(
        static_cast<scalar_t*>(out), n, seed, offset, mean, std);
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void dropout(ScalarType dtype, const void* x, void* out, bool* mask, int64_t n, uint64_t seed, uint64_t offset,
             double p, double scale, cudaStream_t stream) {
  if (n == 0) return;
  const float keep = static_cast<float>(1.0 - p);
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::native_dropout", [&] {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size((n + 3) / 4)), kBlockSize, 0, stream, dropout_kernel<scalar_t>)(
        static_cast<const scalar_t*>(x), static_cast<scalar_t*>(out), mask, n, seed, offset, keep,
        static_cast<acc_t<scalar_t>>(scale));
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void dropout_mask(bool* mask, int64_t n, uint64_t seed, uint64_t offset, double p, cudaStream_t stream) {
  if (n == 0) return;
  REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size((n + 3) / 4)), kBlockSize, 0, stream, dropout_kernel<float>)(
      nullptr, nullptr, mask, n, seed, offset, static_cast<float>(1.0 - p), 0.0f);
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
