// Mirrors ATen/native/cuda/Reduce.cuh (row and column reductions, split-K with a second pass).
//
// Two kernels cover every layout of [outer, reduced, inner]:
//   * rows (inner == 1): a warp (rows up to 1024 elements) or a block (longer rows) per row,
//     16-byte loads when aligned, warp-shuffle trees; few long rows are cut into fixed chunks
//     whose partials a second row pass combines;
//   * columns (inner > 1): a thread per output element walks the reduced dim (coalesced across
//     the warp); few outputs with a long reduced dim are cut into chunks along it, and a second
//     column pass combines the partials.
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/reduce.h"

namespace remat::kernels::cuda {

namespace {

template <ReduceOp OP> struct Reducer;
template <> struct Reducer<ReduceOp::Sum> {
  using Op = SumOp;
  template <class A> __device__ __forceinline__ static A identity() { return A(0); }
};
template <> struct Reducer<ReduceOp::Max> {
  using Op = MaxOp;
  template <class A> __device__ __forceinline__ static A identity() { return neg_infinity<A>(); }
};

// Sizes of a row reduction: `rows` rows of `len` elements, each cut into `nchunks` pieces of
// `chunk` elements (the last may be shorter).
struct RowPlan {
  int64_t rows, len, chunk, nchunks;
  int tpr;  // threads per row: 32 (a warp) or kBlockSize (a block)
  int vec;  // elements per load
};

// Virtual row v = (row, chunk) reduces in[row * len + chunk * chunk_len ...]; writes out[v].
// final_pass: apply scale and convert to the element type; else write the accumulator.
template <int TPR, int VEC, ReduceOp OP, class In, class Out, class A>
__global__ void reduce_rows_kernel(const In* in, Out* out, int64_t rows, int64_t len, int64_t chunk,
                                   int64_t nchunks, A scale, bool apply_scale) {
  using R = Reducer<OP>;
  typename R::Op op;
  __shared__ A smem[32];
  constexpr int kGroups = kBlockSize / TPR;
  const int lane = threadIdx.x % TPR, group = threadIdx.x / TPR;
  const int64_t nvirtual = rows * nchunks;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < nvirtual;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t v = base + group;
    A acc = R::template identity<A>();
    if (v < nvirtual) {
      const int64_t row = v / nchunks, c = v % nchunks;
      const int64_t begin = c * chunk;
      const int64_t n = min(chunk, len - begin);
      const In* p = in + row * len + begin;
      if constexpr (VEC > 1) {
        const int64_t nv = n / VEC;
        const auto* pv = reinterpret_cast<const AlignedVector<In, VEC>*>(p);
#pragma unroll 4
        for (int64_t k = lane; k < nv; k += TPR) {
          AlignedVector<In, VEC> x = pv[k];
#pragma unroll
          for (int j = 0; j < VEC; ++j) acc = op(acc, static_cast<A>(to_acc(x.val[j])));
        }
        for (int64_t k = nv * VEC + lane; k < n; k += TPR) acc = op(acc, static_cast<A>(to_acc(p[k])));
      } else {
        for (int64_t k = lane; k < n; k += TPR) acc = op(acc, static_cast<A>(to_acc(p[k])));
      }
    }
    // Block groups reduce together: every thread of the block takes part (v may be past the end).
    acc = group_allreduce<TPR>(acc, op, R::template identity<A>(), smem);
    if (v < nvirtual && lane == 0) {
      if (apply_scale) acc = acc * scale;
      if constexpr (std::is_same_v<Out, A>) {
        out[v] = acc;
      } else {
        out[v] = convert<Out>(acc);
      }
    }
  }
}

// Output element e = (o, i) of [outer, inner]; chunk c of the reduced dim. Writes
// out[c * outer * inner + e].
template <ReduceOp OP, class In, class Out, class A>
__global__ void reduce_cols_kernel(const In* in, Out* out, int64_t outer, int64_t red, int64_t inner, int64_t chunk,
                                   A scale, bool apply_scale) {
  using R = Reducer<OP>;
  typename R::Op op;
  const int64_t nout = outer * inner;
  const int64_t c = blockIdx.y;
  const int64_t r0 = c * chunk, r1 = min(red, r0 + chunk);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nout; e += stride) {
    const int64_t o = e / inner, i = e % inner;
    const In* p = in + o * red * inner + i;
    A acc = R::template identity<A>();
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {  // four loads in flight
      A x0 = static_cast<A>(to_acc(p[(r + 0) * inner])), x1 = static_cast<A>(to_acc(p[(r + 1) * inner]));
      A x2 = static_cast<A>(to_acc(p[(r + 2) * inner])), x3 = static_cast<A>(to_acc(p[(r + 3) * inner]));
      acc = op(op(op(op(acc, x0), x1), x2), x3);
    }
    for (; r < r1; ++r) acc = op(acc, static_cast<A>(to_acc(p[r * inner])));
    if (apply_scale) acc = acc * scale;
    if constexpr (std::is_same_v<Out, A>) {
      out[c * nout + e] = acc;
    } else {
      out[c * nout + e] = convert<Out>(acc);
    }
  }
}

RowPlan plan_rows(int64_t rows, int64_t len, size_t elem_size) {
  const ReduceChunks c = reduce_row_chunks(rows, len);  // workspace_sizes.h: the ops size the workspace by it
  RowPlan p{rows, len, c.chunk, c.nchunks, 32, 1};
  p.tpr = p.chunk <= 1024 ? 32 : kBlockSize;
  (void)elem_size;
  return p;
}

using ColPlan = ReduceChunks;
ColPlan plan_cols(int64_t outer, int64_t red, int64_t inner) { return reduce_col_chunks(outer, red, inner); }

template <int TPR, int VEC, ReduceOp OP, class In, class Out, class A>
void launch_rows(const In* in, Out* out, const RowPlan& p, A scale, bool apply_scale, cudaStream_t stream) {
  constexpr int kGroups = kBlockSize / TPR;
  const int64_t groups = p.rows * p.nchunks;
  const int64_t blocks_needed = (groups + kGroups - 1) / kGroups;
  const int64_t cap = static_cast<int64_t>(current_sm_count()) * 16;
  const int64_t grid = blocks_needed < cap ? blocks_needed : cap;
  REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid), kBlockSize, 0, stream, reduce_rows_kernel<TPR, VEC, OP, In, Out, A>)(
      in, out, p.rows, p.len, p.chunk, p.nchunks, scale, apply_scale);
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

template <ReduceOp OP, class In, class Out, class A>
void rows_dispatch(const In* in, Out* out, const RowPlan& p, A scale, bool apply_scale, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(In) > 0 ? 16 / sizeof(In) : 1;
  // Vector loads need every chunk start aligned: the base, the row length and the chunk length.
  const bool vec = kVec > 1 && is_aligned(in, 16) && (p.len % kVec == 0) && (p.chunk % kVec == 0);
  if (p.tpr == 32) {
    if (vec) launch_rows<32, kVec, OP>(in, out, p, scale, apply_scale, stream);
    else launch_rows<32, 1, OP>(in, out, p, scale, apply_scale, stream);
  } else {
    if (vec) launch_rows<kBlockSize, kVec, OP>(in, out, p, scale, apply_scale, stream);
    else launch_rows<kBlockSize, 1, OP>(in, out, p, scale, apply_scale, stream);
  }
}

template <ReduceOp OP, class In, class Out, class A>
void launch_cols(const In* in, Out* out, int64_t outer, int64_t red, int64_t inner, const ColPlan& p, A scale,
                 bool apply_scale, cudaStream_t stream) {
  const int64_t nout = outer * inner;
  const int64_t blocks_needed = (nout + kBlockSize - 1) / kBlockSize;
  const int64_t cap = static_cast<int64_t>(current_sm_count()) * 16;
  dim3 grid(static_cast<unsigned>(blocks_needed < cap ? blocks_needed : cap), static_cast<unsigned>(p.nchunks));
  REMAT_CUDA_LAUNCH(grid, kBlockSize, 0, stream, reduce_cols_kernel<OP, In, Out, A>)(in, out, outer, red, inner, p.chunk, scale,
                                                                      apply_scale);
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

template <ReduceOp OP, class T>
void reduce_typed(const T* in, T* out, int64_t outer, int64_t red, int64_t inner, double scale_d, void* workspace,
                  cudaStream_t stream) {
  using A = acc_t<T>;
  const A scale = static_cast<A>(scale_d);
  const bool apply_scale = OP == ReduceOp::Sum && scale_d != 1.0;
  if (inner == 1) {
    RowPlan p = plan_rows(outer, red, sizeof(T));
    if (p.nchunks == 1) {
      rows_dispatch<OP, T, T, A>(in, out, p, scale, apply_scale, stream);
      return;
    }
    A* partial = static_cast<A*>(workspace);
    rows_dispatch<OP, T, A, A>(in, partial, p, scale, false, stream);
    RowPlan second = plan_rows(outer, p.nchunks, sizeof(A));
    rows_dispatch<OP, A, T, A>(partial, out, second, scale, apply_scale, stream);
    return;
  }
  ColPlan p = plan_cols(outer, red, inner);
  if (p.nchunks == 1) {
    launch_cols<OP, T, T, A>(in, out, outer, red, inner, p, scale, apply_scale, stream);
    return;
  }
  A* partial = static_cast<A*>(workspace);
  launch_cols<OP, T, A, A>(in, partial, outer, red, inner, p, scale, false, stream);
  // partials are [nchunks, outer * inner]: a column reduction with outer = 1
  ColPlan second{p.nchunks, 1};
  launch_cols<OP, A, T, A>(partial, out, 1, p.nchunks, outer * inner, second, scale, apply_scale, stream);
}

}  // namespace

void reduce(ReduceOp op, ScalarType dtype, const void* in, void* out, int64_t outer, int64_t reduced, int64_t inner,
            double scale, void* workspace, cudaStream_t stream) {
  if (outer * inner == 0) return;
  REMAT_CHECK(reduced >= 1, "reduce: empty reduced dim (the caller fills the identity)");
  REMAT_CHECK(reduce_workspace_bytes(dtype, outer, reduced, inner) == 0 || workspace != nullptr,
              "reduce: missing workspace");
  REMAT_CUDA_DISPATCH_NUMERIC(dtype, op == ReduceOp::Sum ? "sum" : "amax", [&] {
    const auto* x = static_cast<const scalar_t*>(in);
    auto* y = static_cast<scalar_t*>(out);
    if (op == ReduceOp::Sum) {
      reduce_typed<ReduceOp::Sum>(x, y, outer, reduced, inner, scale, workspace, stream);
    } else {
      reduce_typed<ReduceOp::Max>(x, y, outer, reduced, inner, scale, workspace, stream);
    }
  });
}

}  // namespace remat::kernels::cuda
