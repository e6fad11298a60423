// Mirrors ATen/native/transformers/cuda/mem_eff_attention/kernel_forward.h and kernel_backward.h
// (the memory-efficient attention behind _scaled_dot_product_efficient_attention), in remat's
// plain style: a warp per row, the 32 lanes splitting the head dim (lane l holds elements l,
// l + 32, ...), every dot product a fixed butterfly over the warp. No shared memory, no
// workspace, no atomics: each output element is written by one lane, after sums in one order.
//   * forward: a warp per query row, one online-softmax pass over the keys (Milakov &
//     Gimelshein), writing the row of out and its logsumexp;
//   * backward, dq: a warp per query row walks the keys, recomputing p from q, k and lse;
//   * backward, dk and dv: a warp per key row walks the queries (recomputing p and delta).
#include "kernels/cuda/attention.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"

namespace remat::kernels::cuda {

namespace {

constexpr int kWarps = 4;  // rows per block
constexpr int kChunks = static_cast<int>(kAttentionMaxChunks);

template <class T>
__device__ __forceinline__ const T* row_of(const T* base, const AttentionStrides& s, int64_t b, int64_t h, int64_t r) {
  return base + b * s.b + h * s.h + r * s.row;
}
template <class T>
__device__ __forceinline__ T* row_of(T* base, const AttentionStrides& s, int64_t b, int64_t h, int64_t r) {
  return base + b * s.b + h * s.h + r * s.row;
}

// The lane's slice of a row: elements lane + 32 c for c < kChunks (0 past E).
template <class T, class A>
__device__ __forceinline__ void load_slice(A (&dst)[kChunks], const T* row, int64_t e_stride, int64_t E, int lane) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int64_t e = lane + 32 * c;
    dst[c] = e < E ? to_acc(row[e * e_stride]) : A(0);
  }
}
template <class T, class A>
__device__ __forceinline__ void store_slice(T* row, int64_t e_stride, int64_t E, int lane, const A (&src)[kChunks],
                                            A factor) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int64_t e = lane + 32 * c;
    if (e < E) row[e * e_stride] = convert<T>(src[c] * factor);
  }
}
// sum over the lane's slice of a[c] * row[e]
template <class T, class A>
__device__ __forceinline__ A partial_dot(const A (&a)[kChunks], const T* row, int64_t e_stride, int64_t E, int lane) {
  A s = A(0);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int64_t e = lane + 32 * c;
    if (e < E) s += a[c] * to_acc(row[e * e_stride]);
  }
  return s;
}
template <class A>
__device__ __forceinline__ A partial_dot(const A (&a)[kChunks], const A (&b)[kChunks]) {
  A s = A(0);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) s += a[c] * b[c];
  return s;
}
// Warp sums of N values at once (the same butterfly as warp_allreduce: every lane gets the sum).
template <int N, class A>
__device__ __forceinline__ void warp_sums(A (&v)[N]) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
  }
}

// f(w) for each row w in [0, rows) this warp owns (a grid-stride loop of warps; warp-uniform).
template <class F>
__device__ __forceinline__ void for_each_warp_row(int64_t rows, F&& f) {
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; w < rows;
       w += static_cast<int64_t>(gridDim.x) * kWarps)
    f(w);
}

template <class T>
__global__ void attention_forward_kernel(T* out, AttentionStrides os, T* lse, int64_t lse_len, const T* q,
                                         AttentionStrides qs, const T* k, AttentionStrides ks, const T* v,
                                         AttentionStrides vs, AttentionSizes n, bool causal, T scale) {
  using A = T;
  const int lane = threadIdx.x & 31;
  const int64_t per_bh = lse != nullptr ? lse_len : n.L;  // padded rows write their lse only
  const int64_t rows = n.B * n.H * per_bh;
  for_each_warp_row(rows, [&](int64_t w) {
    const int64_t bh = w / per_bh, i = w % per_bh, b = bh / n.H, h = bh % n.H;
    if (i >= n.L) {
      if (lane == 0) lse[w] = -neg_infinity<A>();
      return;
    }
    A qr[kChunks], acc[kChunks];
    load_slice(qr, row_of(q, qs, b, h, i), qs.e, n.E, lane);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[c] = A(0);
    A m = neg_infinity<A>(), l = A(0);
    const int64_t end = causal && i + 1 < n.S ? i + 1 : n.S;
    for (int64_t j = 0; j < end; ++j) {
      A s[1] = {partial_dot(qr, row_of(k, ks, b, h, j), ks.e, n.E, lane)};
      warp_sums(s);
      const A x = s[0] * scale;
      const A m_new = x > m ? x : m;               // a NaN score leaves m and poisons l below
      const A corr = m_exp(m - m_new);             // m = -inf (the first key): 0
      const A p = m_exp(x - m_new);
      l = l * corr + p;
      const T* vj = row_of(v, vs, b, h, j);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int64_t e = lane + 32 * c;
        acc[c] = acc[c] * corr + (e < n.E ? p * to_acc(vj[e * vs.e]) : A(0));
      }
      m = m_new;
    }
    // No key (S = 0): a zero row and lse = -inf.
    store_slice(row_of(out, os, b, h, i), os.e, n.E, lane, acc, l > A(0) ? A(1) / l : A(0));
    if (lse != nullptr && lane == 0) lse[w] = l > A(0) ? m + m_log(l) : neg_infinity<A>();
  });
}

template <class T>
__global__ void attention_backward_dq_kernel(T* dq, AttentionStrides dqs, const T* dout, AttentionStrides dos,
                                             const T* q, AttentionStrides qs, const T* k, AttentionStrides ks,
                                             const T* v, AttentionStrides vs, const T* out, AttentionStrides os,
                                             const T* lse, int64_t lse_len, AttentionSizes n, bool causal, T scale) {
  using A = T;
  const int lane = threadIdx.x & 31;
  const int64_t rows = n.B * n.H * n.L;
  for_each_warp_row(rows, [&](int64_t w) {
    const int64_t bh = w / n.L, i = w % n.L, b = bh / n.H, h = bh % n.H;
    A qr[kChunks], dor[kChunks], acc[kChunks];
    load_slice(qr, row_of(q, qs, b, h, i), qs.e, n.E, lane);
    load_slice(dor, row_of(dout, dos, b, h, i), dos.e, n.E, lane);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[c] = A(0);
    A delta[1] = {partial_dot(dor, row_of(out, os, b, h, i), os.e, n.E, lane)};
    warp_sums(delta);
    const A lse_i = lse[bh * lse_len + i];
    const int64_t end = causal && i + 1 < n.S ? i + 1 : n.S;
    for (int64_t j = 0; j < end; ++j) {
      const T* kj = row_of(k, ks, b, h, j);
      A d[2] = {partial_dot(qr, kj, ks.e, n.E, lane), partial_dot(dor, row_of(v, vs, b, h, j), vs.e, n.E, lane)};
      warp_sums(d);
      const A p = m_exp(d[0] * scale - lse_i);
      const A ds = p * (d[1] - delta[0]);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int64_t e = lane + 32 * c;
        if (e < n.E) acc[c] += ds * to_acc(kj[e * ks.e]);
      }
    }
    store_slice(row_of(dq, dqs, b, h, i), dqs.e, n.E, lane, acc, scale);
  });
}

template <class T>
__global__ void attention_backward_dkv_kernel(T* dk, AttentionStrides dks, T* dv, AttentionStrides dvs,
                                              const T* dout, AttentionStrides dos, const T* q, AttentionStrides qs,
                                              const T* k, AttentionStrides ks, const T* v, AttentionStrides vs,
                                              const T* out, AttentionStrides os, const T* lse, int64_t lse_len,
                                              AttentionSizes n, bool causal, T scale) {
  using A = T;
  const int lane = threadIdx.x & 31;
  const int64_t rows = n.B * n.H * n.S;
  for_each_warp_row(rows, [&](int64_t w) {
    const int64_t bh = w / n.S, j = w % n.S, b = bh / n.H, h = bh % n.H;
    A kr[kChunks], vr[kChunks], dk_acc[kChunks], dv_acc[kChunks];
    load_slice(kr, row_of(k, ks, b, h, j), ks.e, n.E, lane);
    load_slice(vr, row_of(v, vs, b, h, j), vs.e, n.E, lane);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) dk_acc[c] = dv_acc[c] = A(0);
    for (int64_t i = causal ? j : 0; i < n.L; ++i) {  // causal: only the queries i >= j see key j
      A qi[kChunks], doi[kChunks];
      load_slice(qi, row_of(q, qs, b, h, i), qs.e, n.E, lane);
      load_slice(doi, row_of(dout, dos, b, h, i), dos.e, n.E, lane);
      A d[3] = {partial_dot(qi, kr), partial_dot(doi, vr), partial_dot(doi, row_of(out, os, b, h, i), os.e, n.E, lane)};
      warp_sums(d);
      const A p = m_exp(d[0] * scale - lse[bh * lse_len + i]);
      const A ds = p * (d[1] - d[2]);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        dv_acc[c] += p * doi[c];
        dk_acc[c] += ds * qi[c];
      }
    }
    store_slice(row_of(dk, dks, b, h, j), dks.e, n.E, lane, dk_acc, scale);
    store_slice(row_of(dv, dvs, b, h, j), dvs.e, n.E, lane, dv_acc, A(1));
  });
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(grid_size(rows * 32, kWarps * 32, 8));
}

// f<scalar_t>() for Float and Double; the ops reject the other dtypes first.
template <class F>
void dispatch_float_double(ScalarType dtype, const char* name, F&& f) {
  switch (dtype) {
    case ScalarType::Float: return f(float{});
    case ScalarType::Double: return f(double{});
    default: REMAT_CUDA_DTYPE_ERROR(dtype, name);
  }
}

}  // namespace

void attention_forward(ScalarType dtype, void* out, AttentionStrides out_s, void* lse, int64_t lse_len,
                       const void* q, AttentionStrides q_s, const void* k, AttentionStrides k_s, const void* v,
                       AttentionStrides v_s, AttentionSizes n, bool is_causal, double scale, cudaStream_t stream) {
  const int64_t rows = n.B * n.H * (lse != nullptr ? lse_len : n.L);
  if (rows == 0) return;
  dispatch_float_double(dtype, "aten::_scaled_dot_product_efficient_attention", [&](auto zero) {
    using T = decltype(zero);
    REMAT_CUDA_LAUNCH(row_blocks(rows), kWarps * 32, 0, stream, attention_forward_kernel<T>)(
        static_cast<T*>(out), out_s, static_cast<T*>(lse), lse_len, static_cast<const T*>(q), q_s,
        static_cast<const T*>(k), k_s, static_cast<const T*>(v), v_s, n, is_causal, static_cast<T>(scale));
  });
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

void attention_backward(ScalarType dtype, void* dq, AttentionStrides dq_s, void* dk, AttentionStrides dk_s, void* dv,
                        AttentionStrides dv_s, const void* dout, AttentionStrides dout_s, const void* q,
                        AttentionStrides q_s, const void* k, AttentionStrides k_s, const void* v, AttentionStrides v_s,
                        const void* out, AttentionStrides out_s, const void* lse, int64_t lse_len, AttentionSizes n,
                        bool is_causal, double scale, cudaStream_t stream) {
  dispatch_float_double(dtype, "aten::_scaled_dot_product_efficient_attention_backward", [&](auto zero) {
    using T = decltype(zero);
    const auto* dop = static_cast<const T*>(dout);
    const auto* qp = static_cast<const T*>(q);
    const auto* kp = static_cast<const T*>(k);
    const auto* vp = static_cast<const T*>(v);
    const auto* op = static_cast<const T*>(out);
    const auto* lp = static_cast<const T*>(lse);
    const T sc = static_cast<T>(scale);
    const int64_t q_rows = n.B * n.H * n.L, k_rows = n.B * n.H * n.S;
    if (q_rows > 0) {
      REMAT_CUDA_LAUNCH(row_blocks(q_rows), kWarps * 32, 0, stream, attention_backward_dq_kernel<T>)(
          static_cast<T*>(dq), dq_s, dop, dout_s, qp, q_s, kp, k_s, vp, v_s, op, out_s, lp, lse_len, n, is_causal, sc);
      REMAT_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (k_rows > 0) {
      REMAT_CUDA_LAUNCH(row_blocks(k_rows), kWarps * 32, 0, stream, attention_backward_dkv_kernel<T>)(
          static_cast<T*>(dk), dk_s, static_cast<T*>(dv), dv_s, dop, dout_s, qp, q_s, kp, k_s, vp, v_s, op, out_s, lp,
          lse_len, n, is_causal, sc);
      REMAT_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
}

}  // namespace remat::kernels::cuda
