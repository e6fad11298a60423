// Mirrors ATen/native/cuda/Loss.cu (nll_loss over log_softmax, fused here as in llm.c's
// fused_classifier): a warp per row for up to 1024 classes, a block per row beyond.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/online_softmax.cuh"

namespace remat::kernels::cuda {

namespace {

// row_loss[i] = logsumexp(x[i]) - x[i, t[i]]; a target outside [0, c) is reported, its loss 0.
template <int TPR, class T>
__global__ void ce_forward_rows(const T* x, const int64_t* targets, acc_t<T>* row_loss, int64_t n, int64_t c,
                                IndexError* error) {
  using A = acc_t<T>;
  __shared__ A smem_m[32], smem_s[32];
  constexpr int kGroups = kBlockSize / TPR;
  const int lane = threadIdx.x % TPR, group = threadIdx.x / TPR;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < n;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = base + group;
    const bool active = row < n;
    const T* xr = x + (active ? row : 0) * c;
    MaxSum<A> ms{neg_infinity<A>(), A(0)};
    if (active)
      for (int64_t j = lane; j < c; j += TPR) ms = add_value(ms, to_acc(xr[j]));
    ms = group_combine<TPR>(ms, smem_m, smem_s);
    if (!active || lane != 0) continue;
    const int64_t t = targets[row];
    if (t < 0 || t >= c) {
      atomicMin(&error->position, static_cast<unsigned long long>(row));
      row_loss[row] = A(0);
      continue;
    }
    row_loss[row] = ms.m + m_log(ms.s) - to_acc(xr[t]);
  }
}

// loss = sum(row_loss) / n, one block, in a fixed order.
template <class T>
__global__ void ce_mean_kernel(const acc_t<T>* row_loss, T* loss, int64_t n) {
  using A = acc_t<T>;
  __shared__ A smem[32];
  A s = A(0);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += row_loss[i];
  s = block_allreduce(s, SumOp{}, A(0), smem);
  if (threadIdx.x == 0) *loss = convert<T>(s / static_cast<A>(n));
}

template <int TPR, class T>
__global__ void ce_backward_rows(const acc_t<T>* grad_loss, const T* x, const int64_t* targets, T* dx, int64_t n, int64_t c,
                                 IndexError* error) {
  using A = acc_t<T>;
  __shared__ A smem_m[32], smem_s[32];
  constexpr int kGroups = kBlockSize / TPR;
  const int lane = threadIdx.x % TPR, group = threadIdx.x / TPR;
  const A scale = *grad_loss / static_cast<A>(n);
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < n;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = base + group;
    const bool active = row < n;
    const T* xr = x + (active ? row : 0) * c;
    MaxSum<A> ms{neg_infinity<A>(), A(0)};
    if (active)
      for (int64_t j = lane; j < c; j += TPR) ms = add_value(ms, to_acc(xr[j]));
    ms = group_combine<TPR>(ms, smem_m, smem_s);
    if (!active) continue;
    const int64_t t = targets[row];
    if ((t < 0 || t >= c) && lane == 0) atomicMin(&error->position, static_cast<unsigned long long>(row));
    T* dr = dx + row * c;
    for (int64_t j = lane; j < c; j += TPR) {
      const A p = m_exp(to_acc(xr[j]) - ms.m) / ms.s;
      dr[j] = convert<T>(scale * (p - (j == t ? A(1) : A(0))));
    }
  }
}

int64_t row_grid(int64_t rows, int tpr) {
  const int64_t groups = kBlockSize / tpr;
  const int64_t needed = (rows + groups - 1) / groups;
  const int64_t cap = static_cast<int64_t>(current_sm_count()) * 16;
  const int64_t g = needed < cap ? needed : cap;
  return g < 1 ? 1 : g;
}

}  // namespace

void cross_entropy_forward(ScalarType dtype, const void* logits, const int64_t* targets, void* loss, int64_t n,
                           int64_t c, void* workspace, IndexError* error, cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::cross_entropy", [&] {
    using A = acc_t<scalar_t>;
    const auto* x = static_cast<const scalar_t*>(logits);
    A* rows = static_cast<A*>(workspace);
    if (n > 0) {
      if (c <= 1024) {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(n, 32)), kBlockSize, 0, stream, ce_forward_rows<32, scalar_t>)(
            x, targets, rows, n, c, error);
      } else {
        REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(n, kBlockSize)), kBlockSize, 0, stream, ce_forward_rows<kBlockSize, scalar_t>)(x, targets, rows, n, c, error);
      }
      REMAT_CUDA_KERNEL_LAUNCH_CHECK();
    }
    // n == 0: 0 / 0, NaN, as the mean of no losses is in PyTorch
    REMAT_CUDA_LAUNCH(1, 1024, 0, stream, ce_mean_kernel<scalar_t>)(rows, static_cast<scalar_t*>(loss), n);
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void cross_entropy_backward(ScalarType dtype, const void* grad_loss, const void* logits, const int64_t* targets,
                            void* grad_logits, int64_t n, int64_t c, IndexError* error, cudaStream_t stream) {
  if (n == 0 || c == 0) return;
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::cross_entropy_backward", [&] {
    const auto* g = static_cast<const acc_t<scalar_t>*>(grad_loss);
    const auto* x = static_cast<const scalar_t*>(logits);
    auto* dx = static_cast<scalar_t*>(grad_logits);
    if (c <= 1024) {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(n, 32)), kBlockSize, 0, stream, ce_backward_rows<32, scalar_t>)(
          g, x, targets, dx, n, c, error);
    } else {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(row_grid(n, kBlockSize)), kBlockSize, 0, stream, ce_backward_rows<kBlockSize, scalar_t>)(g, x, targets, dx, n, c, error);
    }
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
