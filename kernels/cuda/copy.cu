// Mirrors ATen/native/cuda/Copy.cu (copy_kernel_cuda), FillKernel.cu and TriangularOps.cu.
#include <type_traits>

#include "kernels/cuda/copy.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/loops.cuh"

namespace remat::kernels::cuda {

namespace {

// static_cast<O>(static_cast<acc_t<I>>(x)), as kernels/cpu's copy_kernel.
template <class O, class I>
struct CastFunctor {
  __device__ __forceinline__ O operator()(I x) const {
    if constexpr (std::is_same_v<O, I>) {
      return x;
    } else {
      return convert<O>(to_acc(x));
    }
  }
};

template <class T>
struct FillFunctor {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};

template <class T>
T host_convert(double v) {
  if constexpr (std::is_same_v<T, bf16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, f16>) {
    return __float2half_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
__global__ void triu_kernel(T* data, int64_t total, int64_t rows, int64_t cols, int64_t diagonal) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride) {
    const int64_t j = k % cols, i = (k / cols) % rows;
    if (j - i < diagonal) data[k] = convert<T>(acc_t<T>(0));
  }
}

}  // namespace

void copy(ScalarType out_dtype, ScalarType in_dtype, const StridedLoop& loop, void* out, const void* in,
          cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_ALL(out_dtype, "copy_", [&] {
    using out_t = scalar_t;
    REMAT_CUDA_DISPATCH_ALL(in_dtype, "copy_", [&] {
      launch_elementwise<out_t, scalar_t>(loop, out, {in}, CastFunctor<out_t, scalar_t>{}, stream);
    });
  });
}

void fill(ScalarType dtype, const StridedLoop& loop, void* out, double value, cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_ALL(dtype, "aten::fill_", [&] {
    launch_elementwise<scalar_t>(loop, out, {}, FillFunctor<scalar_t>{host_convert<scalar_t>(value)}, stream);
  });
}

void triu_(ScalarType dtype, void* data, int64_t batch, int64_t rows, int64_t cols, int64_t diagonal,
           cudaStream_t stream) {
  const int64_t total = batch * rows * cols;
  if (total == 0) return;
  REMAT_CUDA_DISPATCH_ALL(dtype, "aten::triu", [&] {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(total)), kBlockSize, 0, stream, triu_kernel<scalar_t>)(
        static_cast<scalar_t*>(data), total, rows, cols, diagonal);
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
