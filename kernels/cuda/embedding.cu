// Mirrors ATen/native/cuda/Embedding.cu (embedding forward; embedding_dense_backward, here
// without a sort: see kernels/cuda/embedding.h).
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/embedding.h"

namespace remat::kernels::cuda {

namespace {

__device__ __forceinline__ void report(IndexError* error, int64_t position) {
  atomicMin(&error->position, static_cast<unsigned long long>(position));
}

// A warp per output row; lanes copy the row (16-byte vectors when aligned).
template <class T, int VEC>
__global__ void embedding_forward_kernel(const T* weight, const int64_t* indices, T* out, int64_t n,
                                         int64_t num_weights, int64_t dim, IndexError* error) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); i < n; i += warps) {
    const int64_t v = indices[i];
    const bool ok = v >= 0 && v < num_weights;
    if (!ok && lane == 0) report(error, i);
    T* dst = out + i * dim;
    if constexpr (VEC > 1) {
      auto* dv = reinterpret_cast<AlignedVector<T, VEC>*>(dst);
      const auto* sv = reinterpret_cast<const AlignedVector<T, VEC>*>(weight + (ok ? v : 0) * dim);
      AlignedVector<T, VEC> zero;
#pragma unroll
      for (int j = 0; j < VEC; ++j) zero.val[j] = convert<T>(acc_t<T>(0));
      for (int64_t k = lane; k < dim / VEC; k += 32) dv[k] = ok ? sv[k] : zero;
    } else {
      const T* src = weight + (ok ? v : 0) * dim;
      for (int64_t k = lane; k < dim; k += 32) dst[k] = ok ? src[k] : convert<T>(acc_t<T>(0));
    }
  }
}

__global__ void histogram_kernel(const int64_t* indices, int64_t n, int64_t num_weights, int* counts,
                                 IndexError* error) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t v = indices[i];
    if (v >= 0 && v < num_weights) {
      atomicAdd(&counts[v], 1);
    } else {
      report(error, i);
    }
  }
}

// offsets[v] = sum_{u < v} counts[u], one block (chunks of its size, carried in order).
__global__ void exclusive_scan_kernel(const int* counts, int* offsets, int64_t m) {
  __shared__ int buf[kBlockSize];
  __shared__ int carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < m; base += kBlockSize) {
    const int64_t k = base + threadIdx.x;
    const int c = k < m ? counts[k] : 0;
    buf[threadIdx.x] = c;
    __syncthreads();
    // Hillis-Steele inclusive scan in shared memory.
    for (int o = 1; o < kBlockSize; o <<= 1) {
      const int add = static_cast<int>(threadIdx.x) >= o ? buf[threadIdx.x - o] : 0;
      __syncthreads();
      buf[threadIdx.x] += add;
      __syncthreads();
    }
    if (k < m) offsets[k] = carry + buf[threadIdx.x] - c;
    __syncthreads();
    if (threadIdx.x == kBlockSize - 1) carry += buf[threadIdx.x];
    __syncthreads();
  }
}

// positions[offsets[v] + rank] = i, rank = occurrences of v before i. One block walks the
// positions in tiles; within a tile a thread ranks its index against the earlier ones in
// shared memory; cursor[v] carries the count from earlier tiles.
constexpr int kTile = 1024;
__global__ void place_kernel(const int64_t* indices, int64_t n, int64_t num_weights, const int* offsets, int* cursor,
                             int* positions) {
  __shared__ int64_t tile[kTile];
  for (int64_t base = 0; base < n; base += kTile) {
    const int t = threadIdx.x;
    const int64_t i = base + t;
    const int64_t len = min(static_cast<int64_t>(kTile), n - base);
    tile[t] = i < n ? indices[i] : -1;
    __syncthreads();
    const int64_t v = tile[t];
    const bool valid = i < n && v >= 0 && v < num_weights;
    int rank = 0;
    bool last = true;
    if (valid) {
      for (int j = 0; j < len; ++j) {
        if (tile[j] != v) continue;
        if (j < t) ++rank;
        else if (j > t) last = false;
      }
    }
    const int before = valid ? cursor[v] : 0;
    if (valid) positions[offsets[v] + before + rank] = static_cast<int>(i);
    __syncthreads();  // every thread read cursor before any update
    if (valid && last) cursor[v] = before + rank + 1;
    __syncthreads();
  }
}

// A warp per weight row v: sums its segment's gradient rows in position order.
template <class T>
__global__ void segment_sum_kernel(const T* grad, T* grad_weight, const int* counts, const int* offsets,
                                   const int* positions, int64_t num_weights, int64_t dim) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); v < num_weights;
       v += warps) {
    const int begin = offsets[v], count = counts[v];
    for (int64_t d = lane; d < dim; d += 32) {
      A acc = A(0);
      for (int k = 0; k < count; ++k) acc += to_acc(grad[static_cast<int64_t>(positions[begin + k]) * dim + d]);
      grad_weight[v * dim + d] = convert<T>(acc);
    }
  }
}

int64_t warp_grid(int64_t items) {
  const int64_t per_block = kBlockSize / 32;
  const int64_t needed = (items + per_block - 1) / per_block;
  const int64_t cap = static_cast<int64_t>(current_sm_count()) * 32;
  const int64_t g = needed < cap ? needed : cap;
  return g < 1 ? 1 : g;
}


}  // namespace

void embedding_forward(ScalarType dtype, const void* weight, const int64_t* indices, void* out, int64_t n,
                       int64_t num_weights, int64_t dim, IndexError* error, cudaStream_t stream) {
  if (n == 0) return;  // dim 0 still checks the indices
  REMAT_CUDA_DISPATCH_ALL(dtype, "aten::embedding", [&] {
    constexpr int kVec = 16 / sizeof(scalar_t);
    const bool vec = kVec > 1 && dim % kVec == 0 && is_aligned(weight, 16) && is_aligned(out, 16);
    const auto* w = static_cast<const scalar_t*>(weight);
    auto* o = static_cast<scalar_t*>(out);
    if (vec) {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(warp_grid(n)), kBlockSize, 0, stream, embedding_forward_kernel<scalar_t, kVec>)(
          w, indices, o, n, num_weights, dim, error);
    } else {
      REMAT_CUDA_LAUNCH(static_cast<unsigned>(warp_grid(n)), kBlockSize, 0, stream, embedding_forward_kernel<scalar_t, 1>)(
          w, indices, o, n, num_weights, dim, error);
    }
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void embedding_backward(ScalarType dtype, const void* grad, const int64_t* indices, void* grad_weight, int64_t n,
                        int64_t num_weights, int64_t dim, void* workspace, IndexError* error, cudaStream_t stream) {
  REMAT_CHECK(n < static_cast<int64_t>(INT32_MAX), "aten::embedding_dense_backward: more than 2^31 indices (", n,
              ") are not supported on CUDA");
  char* ws = static_cast<char*>(workspace);
  const size_t vbytes = workspace_align_up(static_cast<size_t>(num_weights) * sizeof(int));
  int* counts = reinterpret_cast<int*>(ws);
  int* offsets = reinterpret_cast<int*>(ws + vbytes);
  int* cursor = reinterpret_cast<int*>(ws + 2 * vbytes);
  int* positions = reinterpret_cast<int*>(ws + 3 * vbytes);
  REMAT_CUDA_CHECK(cudaMemsetAsync(counts, 0, static_cast<size_t>(num_weights) * sizeof(int), stream));
  REMAT_CUDA_CHECK(cudaMemsetAsync(cursor, 0, static_cast<size_t>(num_weights) * sizeof(int), stream));
  if (n > 0) {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(n)), kBlockSize, 0, stream, histogram_kernel)(indices, n, num_weights, counts,
                                                                                     error);
    REMAT_CUDA_KERNEL_LAUNCH_CHECK();
  }
  REMAT_CUDA_LAUNCH(1, kBlockSize, 0, stream, exclusive_scan_kernel)(counts, offsets, num_weights);
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
  if (n > 0) {
    REMAT_CUDA_LAUNCH(1, kTile, 0, stream, place_kernel)(indices, n, num_weights, offsets, cursor, positions);
    REMAT_CUDA_KERNEL_LAUNCH_CHECK();
  }
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::embedding_dense_backward", [&] {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(warp_grid(num_weights)), kBlockSize, 0, stream, segment_sum_kernel<scalar_t>)(
        static_cast<const scalar_t*>(grad), static_cast<scalar_t*>(grad_weight), counts, offsets, positions,
        num_weights, dim);
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
