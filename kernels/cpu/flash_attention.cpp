// Mirrors ATen/native/cpu/FlashAttentionKernel.cpp (see flash_attention.h).
#include "kernels/cpu/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/eigen.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"

namespace remat::kernels::cpu {

int64_t flash_attention_query_block(int64_t L) { return L >= 768 ? 256 : L >= 192 ? 64 : 32; }

namespace {

template <class A>
using RowArray = Eigen::Map<Eigen::Array<A, Eigen::Dynamic, 1>>;
template <class A>
using ConstRowArray = Eigen::Map<const Eigen::Array<A, Eigen::Dynamic, 1>>;

// Per-thread scratch, 64-byte aligned as remat's allocator aligns tensors: Eigen peels unaligned
// leading elements off its vectorized sums and exps (scalar code, other rounding), so a malloc'd
// buffer's address would change the results from call to call. Grows, never shrinks.
template <class A>
class Scratch {
 public:
  A* get(int64_t n) {
    if (n > size_) {
      const size_t bytes = (static_cast<size_t>(n) * sizeof(A) + 63) / 64 * 64;
      data_.reset(static_cast<A*>(std::aligned_alloc(64, bytes)));
      if (!data_) throw std::bad_alloc();
      size_ = n;
    }
    return data_.get();
  }
  A* zeroed(int64_t n) {
    A* p = get(n);
    std::fill(p, p + n, A(0));
    return p;
  }

 private:
  struct Free {
    void operator()(A* p) const { std::free(p); }
  };
  std::unique_ptr<A, Free> data_;
  int64_t size_ = 0;
};

// rows x E values of one head in the accumulation type, with their row stride.
template <class A>
struct AccRows {
  const A* data;
  int64_t ld;
};

template <class T>
void widen(const T* in, acc_t<T>* out, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    bf16_to_float(in, out, n);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = acc_t<T>(in[i]);
  }
}

template <class T>
void round_into(const acc_t<T>* in, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    float_to_bf16(in, out, n);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = T(in[i]);
  }
}

// The data itself when T is already the accumulation type (GEMM reads it in place, strided);
// else a widened copy in buf (row stride E): bfloat16 blocks multiply as float.
template <class T, class A = acc_t<T>>
AccRows<A> as_acc(const T* src, int64_t ld, int64_t rows, int64_t E, Scratch<A>& buf) {
  if constexpr (std::is_same_v<T, A>) {
    (void)rows, (void)E, (void)buf;
    return {src, ld};
  } else {
    A* dst = buf.get(rows * E);
    for (int64_t r = 0; r < rows; ++r) widen(src + r * ld, dst + r * E, E);
    return {dst, E};
  }
}

// Keys 0 .. visible-1 of chunk [n0, n0 + nk) are seen by query i (all of them without a mask).
int64_t visible_keys(bool is_causal, int64_t i, int64_t n0, int64_t nk) {
  return is_causal ? std::clamp<int64_t>(i - n0 + 1, 0, nk) : nk;
}

}  // namespace

template <class T>
void flash_attention_forward(T* out, HeadStrides out_st, acc_t<T>* lse, HeadStrides lse_st, const T* q,
                             HeadStrides q_st, const T* k, HeadStrides k_st, const T* v, HeadStrides v_st,
                             const AttentionSizes& n, bool is_causal, acc_t<T> scale) {
  using A = acc_t<T>;
  const int64_t B = n.B, H = n.H, L = n.L, S = n.S, E = n.E;
  const int64_t BQ = flash_attention_query_block(L), BK = kFlashAttentionKeyBlock;
  const int64_t q_blocks = (L + BQ - 1) / BQ;
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  parallel_for(0, B * H * q_blocks, 1, [&](int64_t task_begin, int64_t task_end) {
    Scratch<A> s_buf, acc_buf, q_buf, k_buf, v_buf;  // q, k, v: widened blocks (bfloat16, half)
    A* s = s_buf.get(BQ * BK);        // scores, then P, of one query block x key chunk (rows of BK)
    A* acc = acc_buf.get(BQ * E);     // sum_j P[i, j] v[j]: the unnormalised output rows
    std::vector<A> row_max(static_cast<size_t>(BQ)), row_sum(static_cast<size_t>(BQ));
    AccRows<A> kr{}, vr{};
    int64_t widened_head = -1;
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t bh = task / q_blocks, b = bh / H, h = bh % H;
      const int64_t m0 = (task % q_blocks) * BQ, bq = std::min(BQ, L - m0);
      // causal: the queries m0 .. m0+bq-1 see no key past m0+bq-1 (blocks above the diagonal skipped)
      const int64_t keys = is_causal ? std::min(m0 + bq, S) : S;
      AccRows<A> qr = as_acc(q + b * q_st.b + h * q_st.h + m0 * q_st.t, q_st.t, bq, E, q_buf);
      if (bh != widened_head) {  // consecutive tasks share a head: widen its keys and values once
        kr = as_acc(k + b * k_st.b + h * k_st.h, k_st.t, S, E, k_buf);
        vr = as_acc(v + b * v_st.b + h * v_st.h, v_st.t, S, E, v_buf);
        widened_head = bh;
      }
      std::fill(row_max.begin(), row_max.end(), kNegInf);
      std::fill(row_sum.begin(), row_sum.end(), A(0));
      if (keys == 0) std::fill(acc, acc + BQ * E, A(0));
      for (int64_t n0 = 0; n0 < keys; n0 += BK) {
        const int64_t nk = std::min(BK, keys - n0);
        // s = scale * q k^T
        gemm<A>(false, true, bq, nk, E, scale, qr.data, qr.ld, kr.data + n0 * kr.ld, kr.ld, A(0), s, BK);
        // online softmax: P = exp(s - running max); earlier chunks' sums and outputs rescaled
        for (int64_t r = 0; r < bq; ++r) {
          A* row = s + r * BK;
          const int64_t visible = visible_keys(is_causal, m0 + r, n0, nk);
          const A chunk_max = visible > 0 ? ConstRowArray<A>(row, visible).maxCoeff() : kNegInf;
          const A new_max = std::max(row_max[r], chunk_max);
          std::fill(row + visible, row + nk, A(0));  // masked keys weigh 0
          if (new_max == kNegInf) {                  // nothing seen yet (exp(-inf - -inf) would be NaN)
            std::fill(row, row + visible, A(0));
            continue;
          }
          RowArray<A> p(row, visible);
          p = kernel_exp(p - new_max);
          const A correction = std::exp(row_max[r] - new_max);  // 0 on the first chunk
          row_sum[r] = row_sum[r] * correction + p.sum();
          if (n0 > 0) RowArray<A>(acc + r * E, E) *= correction;
          row_max[r] = new_max;
        }
        // acc += P v
        gemm<A>(false, false, bq, E, nk, A(1), s, BK, vr.data + n0 * vr.ld, vr.ld, n0 == 0 ? A(0) : A(1),
                acc, E);
      }
      // out = acc / sum; lse = max + log(sum). A row that saw no key (S == 0) gets out = 0 and
      // lse = 0, as PyTorch's kernel sets max to 0 and sum to 1 there.
      for (int64_t r = 0; r < bq; ++r) {
        const A m = row_max[r] == kNegInf ? A(0) : row_max[r];
        const A l = row_sum[r] == A(0) ? A(1) : row_sum[r];
        A* a = acc + r * E;
        RowArray<A>(a, E) *= A(1) / l;
        round_into<T>(a, out + b * out_st.b + h * out_st.h + (m0 + r) * out_st.t, E);
        lse[b * lse_st.b + h * lse_st.h + (m0 + r) * lse_st.t] = m + std::log(l);
      }
    }
  });
}

template <class T>
void flash_attention_backward(T* dq, HeadStrides dq_st, T* dk, HeadStrides dk_st, T* dv, HeadStrides dv_st,
                              const T* dout, HeadStrides dout_st, const T* q, HeadStrides q_st, const T* k,
                              HeadStrides k_st, const T* v, HeadStrides v_st, const T* out, HeadStrides out_st,
                              const acc_t<T>* lse, HeadStrides lse_st, const AttentionSizes& n, bool is_causal,
                              acc_t<T> scale) {
  using A = acc_t<T>;
  constexpr bool kInPlace = std::is_same_v<T, A>;  // accumulate straight into dq, dk, dv
  const int64_t B = n.B, H = n.H, L = n.L, S = n.S, E = n.E;
  const int64_t BQ = flash_attention_query_block(L), BK = kFlashAttentionKeyBlock;
  parallel_for(0, B * H, 1, [&](int64_t head_begin, int64_t head_end) {
    Scratch<A> p_buf, dp_buf, q_buf, k_buf, v_buf, dout_buf, out_buf, dq_buf, dk_buf, dv_buf;
    A* p = p_buf.get(BQ * BK);    // P of one query block x key chunk (rows of BK)
    A* dp = dp_buf.get(BQ * BK);  // dP, then ds
    std::vector<A> delta(static_cast<size_t>(L));
    for (int64_t bh = head_begin; bh < head_end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      AccRows<A> qr = as_acc(q + b * q_st.b + h * q_st.h, q_st.t, L, E, q_buf);
      AccRows<A> kr = as_acc(k + b * k_st.b + h * k_st.h, k_st.t, S, E, k_buf);
      AccRows<A> vr = as_acc(v + b * v_st.b + h * v_st.h, v_st.t, S, E, v_buf);
      AccRows<A> dor = as_acc(dout + b * dout_st.b + h * dout_st.h, dout_st.t, L, E, dout_buf);
      AccRows<A> outr = as_acc(out + b * out_st.b + h * out_st.h, out_st.t, L, E, out_buf);
      const A* lse_h = lse + b * lse_st.b + h * lse_st.h;
      // The gradients' accumulators, zeroed: the head's rows of dq, dk, dv themselves, or float rows.
      auto accumulator = [&](T* base, int64_t ld, int64_t rows, Scratch<A>& buf) -> std::pair<A*, int64_t> {
        if constexpr (kInPlace) {
          for (int64_t r = 0; r < rows; ++r) std::fill(base + r * ld, base + r * ld + E, A(0));
          return {base, ld};
        } else {
          (void)base, (void)ld;
          return {buf.zeroed(rows * E), E};
        }
      };
      T* dq_h = dq + b * dq_st.b + h * dq_st.h;
      T* dk_h = dk + b * dk_st.b + h * dk_st.h;
      T* dv_h = dv + b * dv_st.b + h * dv_st.h;
      auto [dq_acc, ld_dq] = accumulator(dq_h, dq_st.t, L, dq_buf);
      auto [dk_acc, ld_dk] = accumulator(dk_h, dk_st.t, S, dk_buf);
      auto [dv_acc, ld_dv] = accumulator(dv_h, dv_st.t, S, dv_buf);
      // delta_i = sum_e dout[i, e] out[i, e]  (= sum_j P[i, j] dP[i, j]: softmax's backward term)
      for (int64_t i = 0; i < L; ++i)
        delta[i] = (ConstRowArray<A>(dor.data + i * dor.ld, E) * ConstRowArray<A>(outr.data + i * outr.ld, E)).sum();
      for (int64_t m0 = 0; m0 < L; m0 += BQ) {
        const int64_t bq = std::min(BQ, L - m0);
        const int64_t keys = is_causal ? std::min(m0 + bq, S) : S;
        const A* q_m = qr.data + m0 * qr.ld;
        const A* do_m = dor.data + m0 * dor.ld;
        for (int64_t n0 = 0; n0 < keys; n0 += BK) {
          const int64_t nk = std::min(BK, keys - n0);
          const A* k_n = kr.data + n0 * kr.ld;
          const A* v_n = vr.data + n0 * vr.ld;
          // forward: P = softmax(scale * q k^T), recomputed as exp(scale * q k^T - lse)
          gemm<A>(false, true, bq, nk, E, scale, q_m, qr.ld, k_n, kr.ld, A(0), p, BK);
          for (int64_t r = 0; r < bq; ++r) {
            A* row = p + r * BK;
            const int64_t visible = visible_keys(is_causal, m0 + r, n0, nk);
            RowArray<A>(row, visible) = kernel_exp(ConstRowArray<A>(row, visible) - lse_h[(m0 + r) * lse_st.t]);
            std::fill(row + visible, row + nk, A(0));
          }
          // forward: out = P v  ->  dv += P^T dout,  dP = dout v^T
          gemm<A>(true, false, nk, E, bq, A(1), p, BK, do_m, dor.ld, A(1), dv_acc + n0 * ld_dv, ld_dv);
          gemm<A>(false, true, bq, nk, E, A(1), do_m, dor.ld, v_n, vr.ld, A(0), dp, BK);
          // forward: P = softmax(s)  ->  ds = P * (dP - delta)
          for (int64_t r = 0; r < bq; ++r) {
            RowArray<A> ds(dp + r * BK, nk);
            ds = ConstRowArray<A>(p + r * BK, nk) * (ds - delta[m0 + r]);
          }
          // forward: s = scale * q k^T  ->  dq += scale * ds k,  dk += scale * ds^T q
          gemm<A>(false, false, bq, E, nk, scale, dp, BK, k_n, kr.ld, A(1), dq_acc + m0 * ld_dq, ld_dq);
          gemm<A>(true, false, nk, E, bq, scale, dp, BK, q_m, qr.ld, A(1), dk_acc + n0 * ld_dk, ld_dk);
        }
      }
      if constexpr (!kInPlace) {
        for (int64_t r = 0; r < L; ++r) round_into<T>(dq_acc + r * E, dq_h + r * dq_st.t, E);
        for (int64_t r = 0; r < S; ++r) round_into<T>(dk_acc + r * E, dk_h + r * dk_st.t, E);
        for (int64_t r = 0; r < S; ++r) round_into<T>(dv_acc + r * E, dv_h + r * dv_st.t, E);
      }
    }
  });
}

#define REMAT_FLASH_ATTENTION_INSTANTIATE(T)                                                                       \
  template void flash_attention_forward<T>(T*, HeadStrides, acc_t<T>*, HeadStrides, const T*, HeadStrides,         \
                                           const T*, HeadStrides, const T*, HeadStrides, const AttentionSizes&,    \
                                           bool, acc_t<T>);                                                        \
  template void flash_attention_backward<T>(T*, HeadStrides, T*, HeadStrides, T*, HeadStrides, const T*,           \
                                            HeadStrides, const T*, HeadStrides, const T*, HeadStrides, const T*,   \
                                            HeadStrides, const T*, HeadStrides, const acc_t<T>*, HeadStrides,      \
                                            const AttentionSizes&, bool, acc_t<T>);
REMAT_FLASH_ATTENTION_INSTANTIATE(float)
REMAT_FLASH_ATTENTION_INSTANTIATE(double)
REMAT_FLASH_ATTENTION_INSTANTIATE(BFloat16)
REMAT_FLASH_ATTENTION_INSTANTIATE(Half)
#undef REMAT_FLASH_ATTENTION_INSTANTIATE

}  // namespace remat::kernels::cpu
