// Mirrors ATen/native/cuda/layer_norm_kernel.cu (vectorized_layer_norm_kernel,
// layer_norm_grad_input_kernel, GammaBetaBackward) for LayerNorm and RMSNorm.
//   forward: a warp per row (cols <= 1024) or a block per row; Welford statistics combined
//            across the group (Chan's formula), then one write pass;
//   backward: the same row groups compute dx from two row sums; dw/db are column sums of
//            dy * xhat and dy over fixed row chunks (partials in the workspace), combined in
//            chunk order by a second kernel (deterministic, no atomics).
#include <limits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/normalization.h"

namespace remat::kernels::cuda {

namespace {

template <class A>
struct Welford {
  A n, mean, m2;
};

template <class A>
__device__ __forceinline__ Welford<A> welford_add(Welford<A> w, A v) {
  w.n += A(1);
  const A delta = v - w.mean;
  w.mean += delta / w.n;
  w.m2 += delta * (v - w.mean);
  return w;
}

template <class A>
__device__ __forceinline__ Welford<A> welford_combine(Welford<A> a, Welford<A> b) {
  if (b.n == A(0)) return a;
  if (a.n == A(0)) return b;
  const A n = a.n + b.n;
  const A delta = b.mean - a.mean;
  const A nb_over_n = b.n / n;
  return {n, a.mean + delta * nb_over_n, a.m2 + b.m2 + delta * delta * a.n * nb_over_n};
}

template <int TPR, class A>
__device__ __forceinline__ Welford<A> group_welford(Welford<A> w, A* smem /* 3 * 32 */) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Welford<A> other{__shfl_xor_sync(0xffffffffu, w.n, o), __shfl_xor_sync(0xffffffffu, w.mean, o),
                     __shfl_xor_sync(0xffffffffu, w.m2, o)};
    w = welford_combine(w, other);
  }
  if constexpr (TPR > 32) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) {
      smem[warp] = w.n;
      smem[32 + warp] = w.mean;
      smem[64 + warp] = w.m2;
    }
    __syncthreads();
    w = lane < nwarps ? Welford<A>{smem[lane], smem[32 + lane], smem[64 + lane]} : Welford<A>{A(0), A(0), A(0)};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      Welford<A> other{__shfl_xor_sync(0xffffffffu, w.n, o), __shfl_xor_sync(0xffffffffu, w.mean, o),
                       __shfl_xor_sync(0xffffffffu, w.m2, o)};
      w = welford_combine(w, other);
    }
  }
  return w;
}

// Rows handled by the row groups of a block: TPR threads per row, kBlockSize / TPR rows at once.
#define REMAT_FOR_EACH_ROW(TPR, rows)                                                  \
  constexpr int kGroups = kBlockSize / (TPR);                                          \
  const int lane = threadIdx.x % (TPR), group = threadIdx.x / (TPR);                   \
  for (int64_t base_ = static_cast<int64_t>(blockIdx.x) * kGroups; base_ < (rows);     \
       base_ += static_cast<int64_t>(gridDim.x) * kGroups)

template <int TPR, class T, bool RMS>
__global__ void norm_forward_kernel(const T* x, const acc_t<T>* w, const acc_t<T>* b, T* y, acc_t<T>* mean_out,
                                    acc_t<T>* rstd_out, int64_t rows, int64_t cols, acc_t<T> eps) {
  using A = acc_t<T>;
  __shared__ A smem[96];
  REMAT_FOR_EACH_ROW(TPR, rows) {
    const int64_t row = base_ + group;
    const bool active = row < rows;
    const T* xr = x + (active ? row : 0) * cols;
    A mean = A(0), rstd = A(0);
    if constexpr (RMS) {
      A ss = A(0);
      if (active)
        for (int64_t j = lane; j < cols; j += TPR) {
          const A v = to_acc(xr[j]);
          ss += v * v;
        }
      ss = group_allreduce<TPR>(ss, SumOp{}, A(0), smem);
      rstd = A(1) / m_sqrt(ss / static_cast<A>(cols) + eps);
    } else {
      Welford<A> wf{A(0), A(0), A(0)};
      if (active)
        for (int64_t j = lane; j < cols; j += TPR) wf = welford_add(wf, to_acc(xr[j]));
      wf = group_welford<TPR>(wf, smem);
      // the mean of no elements is 0 / 0 (NaN), as the CPU kernel's sum / N
      mean = cols > 0 ? wf.mean : std::numeric_limits<A>::quiet_NaN();
      rstd = A(1) / m_sqrt(wf.m2 / static_cast<A>(cols) + eps);
    }
    if (!active) continue;
    T* yr = y + row * cols;
    for (int64_t j = lane; j < cols; j += TPR) {
      A v = (to_acc(xr[j]) - mean) * rstd;
      if (w != nullptr) v *= w[j];
      if constexpr (!RMS) {
        if (b != nullptr) v += b[j];
      }
      yr[j] = convert<T>(v);
    }
    if (lane == 0) {
      if constexpr (!RMS) mean_out[row] = mean;
      rstd_out[row] = rstd;
    }
  }
}

// dx for one row group; RMS: mean = 0 and only the xhat term.
template <int TPR, class T, bool RMS>
__global__ void norm_backward_dx_kernel(const T* dy, const T* x, const acc_t<T>* mean_in, const acc_t<T>* rstd_in,
                                        const acc_t<T>* w, T* dx, int64_t rows, int64_t cols) {
  using A = acc_t<T>;
  __shared__ A smem[32];
  REMAT_FOR_EACH_ROW(TPR, rows) {
    const int64_t row = base_ + group;
    const bool active = row < rows;
    const int64_t off = (active ? row : 0) * cols;
    const A mean = RMS || !active ? A(0) : mean_in[row];
    const A rstd = active ? rstd_in[row] : A(0);
    A sum_g = A(0), sum_gx = A(0);
    if (active)
      for (int64_t j = lane; j < cols; j += TPR) {
        const A g = to_acc(dy[off + j]) * (w != nullptr ? w[j] : A(1));
        const A xhat = (to_acc(x[off + j]) - mean) * rstd;
        sum_g += g;
        sum_gx += g * xhat;
      }
    if constexpr (!RMS) sum_g = group_allreduce<TPR>(sum_g, SumOp{}, A(0), smem);
    sum_gx = group_allreduce<TPR>(sum_gx, SumOp{}, A(0), smem);
    if (!active) continue;
    const A inv_n = A(1) / static_cast<A>(cols);
    const A mean_g = RMS ? A(0) : sum_g * inv_n, mean_gx = sum_gx * inv_n;
    for (int64_t j = lane; j < cols; j += TPR) {
      const A g = to_acc(dy[off + j]) * (w != nullptr ? w[j] : A(1));
      const A xhat = (to_acc(x[off + j]) - mean) * rstd;
      dx[off + j] = convert<T>(rstd * (g - mean_g - xhat * mean_gx));
    }
  }
}

// Partial column sums over row chunk blockIdx.y: pw[c][j] = sum dy * xhat, pb[c][j] = sum dy.
template <class T, bool RMS>
__global__ void norm_backward_partial_kernel(const T* dy, const T* x, const acc_t<T>* mean_in,
                                             const acc_t<T>* rstd_in, acc_t<T>* pw, acc_t<T>* pb, int64_t rows,
                                             int64_t cols, int64_t rows_per_chunk) {
  using A = acc_t<T>;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = min(rows, r0 + rows_per_chunk);
  A sw = A(0), sb = A(0);
  for (int64_t r = r0; r < r1; ++r) {
    const A g = to_acc(dy[r * cols + j]);
    const A mean = RMS ? A(0) : mean_in[r];
    sw += g * (to_acc(x[r * cols + j]) - mean) * rstd_in[r];
    sb += g;
  }
  pw[blockIdx.y * cols + j] = sw;
  if (pb != nullptr) pb[blockIdx.y * cols + j] = sb;
}

template <class A>
__global__ void column_finish_kernel(const A* partial, A* out, int64_t nchunks, int64_t cols) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  A s = A(0);
  for (int64_t c = 0; c < nchunks; ++c) s += partial[c * cols + j];
  out[j] = s;
}

int64_t row_grid(int64_t rows, int tpr) {
  const int64_t groups = kBlockSize / tpr;
  const int64_t needed = (rows + groups - 1) / groups;
  const int64_t cap = static_cast<int64_t>(current_sm_count()) * 16;
  return needed < cap ? needed : cap;
}

template <bool RMS>
void forward_impl(ScalarType dtype, const void* x, const void* weight, const void* bias, void* y, void* mean,
                  void* rstd, int64_t rows, int64_t cols, double eps, cudaStream_t stream) {
  if (rows == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, RMS ? "aten::_fused_rms_norm" : "aten::native_layer_norm", [&] {
    using A = acc_t<scalar_t>;
    const auto* xp = static_cast<const scalar_t*>(x);
    const auto* wp = static_cast<const A*>(weight);
    const auto* bp = static_cast<const A*>(bias);
    auto* yp = static_cast<scalar_t*>(y);
    if (cols <= 1024) {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, 32)), kBlockSize, 0, stream, norm_forward_kernel<32, scalar_t, RMS>)(
          xp, wp, bp, yp, static_cast<A*>(mean), static_cast<A*>(rstd), rows, cols, static_cast<A>(eps));
    } else {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, kBlockSize)), kBlockSize, 0, stream, norm_forward_kernel<kBlockSize, scalar_t, RMS>)(
              xp, wp, bp, yp, static_cast<A*>(mean), static_cast<A*>(rstd), rows, cols, static_cast<A>(eps));
    }
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

template <bool RMS>
void backward_impl(ScalarType dtype, const void* grad_out, const void* x, const void* mean, const void* rstd,
                   const void* weight, void* grad_x, void* grad_weight, void* grad_bias, int64_t rows, int64_t cols,
                   void* workspace, cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_FLOATING(dtype, RMS ? "aten::_fused_rms_norm_backward" : "aten::native_layer_norm_backward", [&] {
    using A = acc_t<scalar_t>;
    const auto* dyp = static_cast<const scalar_t*>(grad_out);
    const auto* xp = static_cast<const scalar_t*>(x);
    const auto* mp = static_cast<const A*>(mean);
    const auto* rp = static_cast<const A*>(rstd);
    const auto* wp = static_cast<const A*>(weight);
    if (grad_x != nullptr && rows > 0) {
      auto* dxp = static_cast<scalar_t*>(grad_x);
      if (cols <= 1024) {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, 32)), kBlockSize, 0, stream, norm_backward_dx_kernel<32, scalar_t, RMS>)(dyp, xp, mp, rp, wp, dxp, rows,
                                                                                  cols);
      } else {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, kBlockSize)), kBlockSize, 0, stream, norm_backward_dx_kernel<kBlockSize, scalar_t, RMS>)(dyp, xp, mp, rp, wp, dxp,
                                                                                          rows, cols);
      }
      REMAT_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (grad_weight == nullptr && grad_bias == nullptr) return;
    const int64_t per = norm_rows_per_chunk(rows);
    const int64_t nchunks = rows == 0 ? 1 : (rows + per - 1) / per;
    A* pw = static_cast<A*>(workspace);
    A* pb = pw + nchunks * cols;
    const unsigned col_blocks = static_cast<unsigned>((cols + kBlockSize - 1) / kBlockSize);
    if (rows > 0) {
      REMAT_CUDA_LAUNCH(dim3(col_blocks, static_cast<unsigned>(nchunks)), kBlockSize, 0, stream, norm_backward_partial_kernel<scalar_t, RMS>)(dyp, xp, mp, rp, pw, grad_bias != nullptr ? pb : nullptr,
                                                              rows, cols, per);
      REMAT_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
      REMAT_CUDA_CHECK(cudaMemsetAsync(pw, 0, 2 * static_cast<size_t>(cols) * sizeof(A), stream));
    }
    if (grad_weight != nullptr) {
      REMAT_CUDA_LAUNCH(col_blocks, kBlockSize, 0, stream, column_finish_kernel<A>)(pw, static_cast<A*>(grad_weight), nchunks, cols);
      REMAT_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (grad_bias != nullptr) {
      REMAT_CUDA_LAUNCH(col_blocks, kBlockSize, 0, stream, column_finish_kernel<A>)(pb, static_cast<A*>(grad_bias), nchunks, cols);
      REMAT_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
}

}  // namespace

void layer_norm_forward(ScalarType dtype, const void* x, const void* weight, const void* bias, void* y, void* mean,
                        void* rstd, int64_t rows, int64_t cols, double eps, cudaStream_t stream) {
  forward_impl<false>(dtype, x, weight, bias, y, mean, rstd, rows, cols, eps, stream);
}

void rms_norm_forward(ScalarType dtype, const void* x, const void* weight, void* y, void* rstd, int64_t rows,
                      int64_t cols, double eps, cudaStream_t stream) {
  forward_impl<true>(dtype, x, weight, nullptr, y, nullptr, rstd, rows, cols, eps, stream);
}

void layer_norm_backward(ScalarType dtype, const void* grad_out, const void* x, const void* mean, const void* rstd,
                         const void* weight, void* grad_x, void* grad_weight, void* grad_bias, int64_t rows,
                         int64_t cols, void* workspace, cudaStream_t stream) {
  backward_impl<false>(dtype, grad_out, x, mean, rstd, weight, grad_x, grad_weight, grad_bias, rows, cols, workspace,
                       stream);
}

void rms_norm_backward(ScalarType dtype, const void* grad_out, const void* x, const void* rstd, const void* weight,
                       void* grad_x, void* grad_weight, int64_t rows, int64_t cols, void* workspace,
                       cudaStream_t stream) {
  backward_impl<true>(dtype, grad_out, x, nullptr, rstd, weight, grad_x, grad_weight, nullptr, rows, cols, workspace,
                      stream);
}

}  // namespace remat::kernels::cuda
