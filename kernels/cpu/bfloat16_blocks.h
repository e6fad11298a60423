// Mirrors ATen/cpu/vec/functional_bfloat16.h (vec::map, map2, map3 over BFloat16): an elementwise
// loop over contiguous bfloat16 arrays that widens a block of each input to float, runs the
// float kernel on it (Eigen's packet math), and rounds the block's result once. bf16 then costs
// what float costs per element, with half the memory traffic, instead of one libm call per
// element.
#pragma once

#include <array>
#include <cstdint>
#include <cstddef>
#include <vector>

#include "engine/core/bfloat16.h"
#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/parallel.h"

namespace remat::kernels::cpu {

// Elements per block: the float copies of a block stay in L1.
constexpr int64_t kFloatBlock = 1024;

// One run, on the calling thread: out[i] = f(in_0[i * stride_0], ...) for i < n, each input's
// stride 1 (contiguous) or 0 (one value broadcast over the run); out contiguous. f(float* out,
// const float* const* in, int64_t len) computes one block of len <= kFloatBlock floats. An input
// may be the output itself (in-place ops): each block is widened before its result is written.
template <int N, class F>
void map_bf16_run(BFloat16* out, const std::array<const BFloat16*, N>& in, const std::array<int64_t, N>& stride,
                  int64_t n, const F& f) {
  alignas(64) float bufs[N > 0 ? N : 1][kFloatBlock];
  alignas(64) float result[kFloatBlock];
  const float* ins[N > 0 ? N : 1];
  for (int j = 0; j < N; ++j) {
    ins[j] = bufs[j];
    if (stride[static_cast<size_t>(j)] == 0) {  // a broadcast value: widened once for every block
      const float v = float(*in[static_cast<size_t>(j)]);
      for (int64_t k = 0; k < kFloatBlock; ++k) bufs[j][k] = v;
    }
  }
  for (int64_t lo = 0; lo < n; lo += kFloatBlock) {
    const int64_t len = n - lo < kFloatBlock ? n - lo : kFloatBlock;
    for (int j = 0; j < N; ++j)
      if (stride[static_cast<size_t>(j)] != 0) bf16_to_float(in[static_cast<size_t>(j)] + lo, bufs[j], len);
    f(result, ins, len);
    float_to_bf16(result, out + lo, len);
  }
}

// map_bf16_run over n contiguous elements of every operand, split across the threads.
template <int N, class F>
void map_bf16_blocks(BFloat16* out, const std::array<const BFloat16*, N>& in, int64_t n, const F& f) {
  std::array<int64_t, N> unit;
  unit.fill(1);
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    std::array<const BFloat16*, N> at;
    for (int j = 0; j < N; ++j) at[static_cast<size_t>(j)] = in[static_cast<size_t>(j)] + b;
    map_bf16_run<N>(out + b, at, unit, e - b, f);
  });
}

// Floats a row buffer of len elements takes so that the next one starts on a 64-byte boundary.
inline int64_t aligned_row_floats(int64_t len) { return (len + 15) / 16 * 16; }

// n floats of `storage` starting on a 64-byte boundary. Why: Eigen peels a misaligned
// destination's first elements off its vector loop, scalar (one libm call each for exp): on short
// rows (softmax over 128 scores) those dominate.
inline float* aligned_floats(std::vector<float>& storage, int64_t n) {
  storage.resize(static_cast<size_t>(n + 16));
  const auto address = reinterpret_cast<uintptr_t>(storage.data());
  return storage.data() + ((64 - address % 64) % 64) / sizeof(float);
}

// Row kernels (softmax, layer_norm): runs row_fn(r, float* out_row, {float* in_row...}) on widened
// copies of each bfloat16 row r in [b, e) of N row-major inputs of rows of len elements, on the
// calling thread, rounding each output row once. Each widened row starts 64-byte aligned.
template <int N, class F>
void bf16_rows(BFloat16* out, const std::array<const BFloat16*, N>& in, int64_t b, int64_t e, int64_t len,
               const F& row_fn) {
  const int64_t stride = aligned_row_floats(len);
  std::vector<float> storage;
  float* bufs = aligned_floats(storage, (N + 1) * stride);
  float* y = bufs + N * stride;
  for (int64_t r = b; r < e; ++r) {
    std::array<const float*, N> x;
    for (int j = 0; j < N; ++j) {
      float* xj = bufs + j * stride;
      bf16_to_float(in[static_cast<size_t>(j)] + r * len, xj, len);
      x[static_cast<size_t>(j)] = xj;
    }
    row_fn(r, y, x);
    float_to_bf16(y, out + r * len, len);
  }
}

}  // namespace remat::kernels::cpu
