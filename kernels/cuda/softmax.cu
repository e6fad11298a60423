// Mirrors ATen/native/cuda/SoftMax.cu (persistent/block softmax) with an online max-and-sum:
// one read pass computes both, a second pass writes (it re-reads the row, which a warp or a
// block just touched, so it mostly comes from cache).
//   * dim innermost (inner == 1): a warp per row for rows of up to 1024 elements, a block per
//     row beyond;
//   * otherwise a thread per (outer, inner) column walks the dim (coalesced across the warp).
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/online_softmax.cuh"
#include "kernels/cuda/softmax.h"

namespace remat::kernels::cuda {

namespace {

template <int TPR, class T>
__global__ void softmax_rows_forward(const T* x, T* y, int64_t rows, int64_t len, bool log) {
  using A = acc_t<T>;
  __shared__ A smem_m[32], smem_s[32];
  constexpr int kGroups = kBlockSize / TPR;
  const int lane = threadIdx.x % TPR, group = threadIdx.x / TPR;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < rows;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = base + group;
    const bool active = row < rows;
    const T* xr = x + (active ? row : 0) * len;
    MaxSum<A> ms{neg_infinity<A>(), A(0)};
    if (active)
      for (int64_t j = lane; j < len; j += TPR) ms = add_value(ms, to_acc(xr[j]));
    ms = group_combine<TPR>(ms, smem_m, smem_s);
    if (!active) continue;
    T* yr = y + row * len;
    if (log) {
      const A shift = ms.m + m_log(ms.s);
      for (int64_t j = lane; j < len; j += TPR) yr[j] = convert<T>(to_acc(xr[j]) - shift);
    } else {
      for (int64_t j = lane; j < len; j += TPR) yr[j] = convert<T>(m_exp(to_acc(xr[j]) - ms.m) / ms.s);
    }
  }
}

template <int TPR, class T>
__global__ void softmax_rows_backward(const T* dy, const T* y, T* dx, int64_t rows, int64_t len, bool log) {
  using A = acc_t<T>;
  __shared__ A smem[32];
  constexpr int kGroups = kBlockSize / TPR;
  const int lane = threadIdx.x % TPR, group = threadIdx.x / TPR;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < rows;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = base + group;
    const bool active = row < rows;
    const int64_t off = (active ? row : 0) * len;
    A sum = A(0);
    if (active) {
      if (log) {
        for (int64_t j = lane; j < len; j += TPR) sum += to_acc(dy[off + j]);
      } else {
        for (int64_t j = lane; j < len; j += TPR) sum += to_acc(dy[off + j]) * to_acc(y[off + j]);
      }
    }
    sum = group_allreduce<TPR>(sum, SumOp{}, A(0), smem);
    if (!active) continue;
    if (log) {
      for (int64_t j = lane; j < len; j += TPR)
        dx[off + j] = convert<T>(to_acc(dy[off + j]) - m_exp(to_acc(y[off + j])) * sum);
    } else {
      for (int64_t j = lane; j < len; j += TPR) {
        const A yj = to_acc(y[off + j]);
        dx[off + j] = convert<T>(yj * (to_acc(dy[off + j]) - sum));
      }
    }
  }
}

// A thread per (o, i): the dim has stride inner.
template <class T>
__global__ void softmax_cols_forward(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, bool log) {
  using A = acc_t<T>;
  const int64_t n = outer * inner, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const int64_t o = e / inner, i = e % inner;
    const int64_t off = o * len * inner + i;
    MaxSum<A> ms{neg_infinity<A>(), A(0)};
    for (int64_t j = 0; j < len; ++j) ms = add_value(ms, to_acc(x[off + j * inner]));
    if (log) {
      const A shift = ms.m + m_log(ms.s);
      for (int64_t j = 0; j < len; ++j) y[off + j * inner] = convert<T>(to_acc(x[off + j * inner]) - shift);
    } else {
      for (int64_t j = 0; j < len; ++j) y[off + j * inner] = convert<T>(m_exp(to_acc(x[off + j * inner]) - ms.m) / ms.s);
    }
  }
}

template <class T>
__global__ void softmax_cols_backward(const T* dy, const T* y, T* dx, int64_t outer, int64_t len, int64_t inner,
                                      bool log) {
  using A = acc_t<T>;
  const int64_t n = outer * inner, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const int64_t o = e / inner, i = e % inner;
    const int64_t off = o * len * inner + i;
    A sum = A(0);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t k = off + j * inner;
      sum += log ? to_acc(dy[k]) : to_acc(dy[k]) * to_acc(y[k]);
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t k = off + j * inner;
      dx[k] = log ? convert<T>(to_acc(dy[k]) - m_exp(to_acc(y[k])) * sum)
                  : convert<T>(to_acc(y[k]) * (to_acc(dy[k]) - sum));
    }
  }
}

// _masked_softmax: softmax_rows_forward skipping the masked (row r reads mask row r % mask_rows).
template <int TPR, class T>
__global__ void masked_softmax_rows_forward(const T* x, const bool* mask, T* y, int64_t rows, int64_t len,
                                            int64_t mask_rows) {
  using A = acc_t<T>;
  __shared__ A smem_m[32], smem_s[32], smem_any[32];
  constexpr int kGroups = kBlockSize / TPR;
  const int lane = threadIdx.x % TPR, group = threadIdx.x / TPR;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < rows;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = base + group;
    const bool active = row < rows;
    const T* xr = x + (active ? row : 0) * len;
    const bool* mr = mask + (active ? row % mask_rows : 0) * len;
    MaxSum<A> ms{neg_infinity<A>(), A(0)};
    bool any = false;
    if (active)
      for (int64_t j = lane; j < len; j += TPR)
        if (!mr[j]) {
          ms = add_value(ms, to_acc(xr[j]));
          any = true;
        }
    ms = group_combine<TPR>(ms, smem_m, smem_s);
    // whether the row has an unmasked element (its max may be -inf too)
    any = group_allreduce<TPR>(any ? A(1) : A(0), SumOp{}, A(0), smem_any) > A(0);
    if (!active) continue;
    T* yr = y + row * len;
    for (int64_t j = lane; j < len; j += TPR)
      yr[j] = (mr[j] || !any) ? convert<T>(A(0)) : convert<T>(m_exp(to_acc(xr[j]) - ms.m) / ms.s);
  }
}

template <int TPR, class T>
__global__ void masked_softmax_rows_backward(const T* dy, const T* y, const bool* mask, T* dx, int64_t rows,
                                             int64_t len, int64_t mask_rows) {
  using A = acc_t<T>;
  __shared__ A smem[32];
  constexpr int kGroups = kBlockSize / TPR;
  const int lane = threadIdx.x % TPR, group = threadIdx.x / TPR;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < rows;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = base + group;
    const bool active = row < rows;
    const int64_t off = (active ? row : 0) * len;
    const bool* mr = mask + (active ? row % mask_rows : 0) * len;
    A sum = A(0);
    if (active)
      for (int64_t j = lane; j < len; j += TPR) sum += to_acc(dy[off + j]) * to_acc(y[off + j]);
    sum = group_allreduce<TPR>(sum, SumOp{}, A(0), smem);
    if (!active) continue;
    for (int64_t j = lane; j < len; j += TPR)
      dx[off + j] = mr[j] ? convert<T>(A(0)) : convert<T>(to_acc(y[off + j]) * (to_acc(dy[off + j]) - sum));
  }
}

int64_t row_grid(int64_t rows, int tpr) {
  const int64_t groups = kBlockSize / tpr;
  const int64_t needed = (rows + groups - 1) / groups;
  const int64_t cap = static_cast<int64_t>(current_sm_count()) * 16;
  return needed < cap ? needed : cap;
}

}  // namespace

void softmax_forward(ScalarType dtype, const void* x, void* y, int64_t outer, int64_t dim_size, int64_t inner,
                     bool log, cudaStream_t stream) {
  if (outer * dim_size * inner == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, log ? "aten::log_softmax" : "aten::softmax", [&] {
    const auto* xp = static_cast<const scalar_t*>(x);
    auto* yp = static_cast<scalar_t*>(y);
    if (inner == 1) {
      if (dim_size <= 1024) {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(outer, 32)), kBlockSize, 0, stream, softmax_rows_forward<32, scalar_t>)(
            xp, yp, outer, dim_size, log);
      } else {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(outer, kBlockSize)), kBlockSize, 0, stream, softmax_rows_forward<kBlockSize, scalar_t>)(xp, yp, outer, dim_size,
                                                                                           log);
      }
    } else {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(outer * inner)), kBlockSize, 0, stream, softmax_cols_forward<scalar_t>)(
          xp, yp, outer, dim_size, inner, log);
    }
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void softmax_backward(ScalarType dtype, const void* grad_out, const void* y, void* grad_in, int64_t outer,
                      int64_t dim_size, int64_t inner, bool log, cudaStream_t stream) {
  if (outer * dim_size * inner == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, log ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data", [&] {
    const auto* gp = static_cast<const scalar_t*>(grad_out);
    const auto* yp = static_cast<const scalar_t*>(y);
    auto* dp = static_cast<scalar_t*>(grad_in);
    if (inner == 1) {
      if (dim_size <= 1024) {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(outer, 32)), kBlockSize, 0, stream, softmax_rows_backward<32, scalar_t>)(
            gp, yp, dp, outer, dim_size, log);
      } else {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(outer, kBlockSize)), kBlockSize, 0, stream, softmax_rows_backward<kBlockSize, scalar_t>)(gp, yp, dp, outer,
                                                                                           dim_size, log);
      }
    } else {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(outer * inner)), kBlockSize, 0, stream, softmax_cols_backward<scalar_t>)(
          gp, yp, dp, outer, dim_size, inner, log);
    }
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void masked_softmax_forward(ScalarType dtype, const void* x, const bool* mask, void* y, int64_t rows,
                            int64_t dim_size, int64_t mask_rows, cudaStream_t stream) {
  if (rows * dim_size == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::_masked_softmax", [&] {
    const auto* xp = static_cast<const scalar_t*>(x);
    auto* yp = static_cast<scalar_t*>(y);
    if (dim_size <= 1024) {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, 32)), kBlockSize, 0, stream,
                        masked_softmax_rows_forward<32, scalar_t>)(xp, mask, yp, rows, dim_size, mask_rows);
    } else {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, kBlockSize)), kBlockSize, 0, stream,
                        masked_softmax_rows_forward<kBlockSize, scalar_t>)(xp, mask, yp, rows, dim_size, mask_rows);
    }
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void masked_softmax_backward(ScalarType dtype, const void* grad_out, const void* y, const bool* mask, void* grad_in,
                             int64_t rows, int64_t dim_size, int64_t mask_rows, cudaStream_t stream) {
  if (rows * dim_size == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::_masked_softmax_backward", [&] {
    const auto* gp = static_cast<const scalar_t*>(grad_out);
    const auto* yp = static_cast<const scalar_t*>(y);
    auto* dp = static_cast<scalar_t*>(grad_in);
    if (dim_size <= 1024) {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, 32)), kBlockSize, 0, stream,
                        masked_softmax_rows_backward<32, scalar_t>)(gp, yp, mask, dp, rows, dim_size, mask_rows);
    } else {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(rows, kBlockSize)), kBlockSize, 0, stream,
                        masked_softmax_rows_backward<kBlockSize, scalar_t>)(gp, yp, mask, dp, rows, dim_size,
                                                                             mask_rows);
    }
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
