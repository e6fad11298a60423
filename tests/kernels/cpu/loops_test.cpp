// Tests kernels/cpu/loops.h: LoopShape's coalescing, for_each_run's runs and offsets from any
// starting element (a thread's share of the space begins anywhere, mid-run included), and
// parallel_for_each_row_block's blocks of rows.
#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/cpu/loops.h"

using remat::kernels::cpu::for_each_run;
using remat::kernels::cpu::LoopShape;

namespace {

// The rotary's complex product: out and a contiguous [8, 4, 3, 5], b broadcast over dims 0 and 2.
LoopShape rotary_like() {
  LoopShape s;
  s.ndim = 4;
  s.noperands = 3;
  s.sizes = {8, 4, 3, 5};
  s.strides[0] = {60, 15, 5, 1};
  s.strides[1] = {60, 15, 5, 1};
  s.strides[2] = {0, 5, 0, 1};
  return s;
}

// Offset of linear element e in operand i, from its index.
int64_t offset_of(const LoopShape& s, int i, int64_t e) {
  int64_t off = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    off += (e % s.sizes[d]) * s.strides[i][d];
    e /= s.sizes[d];
  }
  return off;
}

}  // namespace

TEST_CASE("for_each_run: every element of [begin, end) once, at its offset in every operand", "[loops]") {
  const LoopShape s = rotary_like();
  const int64_t numel = s.numel();
  REQUIRE(numel == 480);
  for (int64_t begin : {int64_t{0}, int64_t{2}, int64_t{5}, int64_t{17}, int64_t{59}, int64_t{61}, int64_t{299}})
    for (int64_t end : {begin, begin + 1, begin + 3, begin + 64, numel}) {
      if (end > numel) continue;
      INFO("begin " << begin << ", end " << end);
      int64_t e = begin;
      bool offsets_right = true, runs_inside = true;
      for_each_run(s, begin, end, [&](const auto& off, int64_t n, const auto& st) {
        runs_inside = runs_inside && n >= 1 && n <= 5 && (e % 5) + n <= 5;
        for (int64_t k = 0; k < n; ++k, ++e)
          for (int i = 0; i < 3; ++i) offsets_right = offsets_right && off[i] + k * st[i] == offset_of(s, i, e);
      });
      CHECK(offsets_right);
      CHECK(runs_inside);
      CHECK(e == end);
    }
}

TEST_CASE("LoopShape::coalesce: contiguous dims merge, a broadcast dim stays", "[loops]") {
  LoopShape s = rotary_like();
  s.coalesce();
  CHECK(s.ndim == 4);  // b's strides break every merge
  LoopShape flat;
  flat.ndim = 3;
  flat.noperands = 2;
  flat.sizes = {2, 1, 6};
  flat.strides[0] = {6, 6, 1};
  flat.strides[1] = {6, 6, 1};
  flat.coalesce();
  CHECK(flat.ndim == 1);
  CHECK(flat.sizes[0] == 12);
  CHECK(flat.is_contiguous());
}

TEST_CASE("parallel_for_each_row_block: every element once, at its offset, in blocks inside one outer index",
          "[loops]") {
  using remat::kernels::cpu::parallel_for_each_row_block;
  LoopShape flat;  // one dim: blocks of one row
  flat.ndim = 1;
  flat.noperands = 2;
  flat.sizes[0] = 100;
  flat.strides[0][0] = flat.strides[1][0] = 1;
  for (const LoopShape& s : {rotary_like(), flat}) {
    const int64_t numel = s.numel();
    const int64_t inner = s.sizes[s.ndim - 1];
    for (int threads : {1, 2}) {
      INFO(s.ndim << " dims, " << threads << " thread(s)");
      const int before = omp_get_max_threads();
      omp_set_num_threads(threads);
      std::vector<int> seen(static_cast<size_t>(numel), 0);
      std::vector<int> bad(static_cast<size_t>(numel), 0);
      parallel_for_each_row_block(s, [&](const auto& off, int64_t n, const auto& st, int64_t rows, const auto& rs) {
        // the first element of the block: find it by operand 0's offset (out is dense here)
        const int64_t first = off[0];
        const bool in_one_outer = s.ndim < 2 || (first / inner) % s.sizes[s.ndim - 2] + rows <= s.sizes[s.ndim - 2];
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < n; ++k) {
            const int64_t e = first + r * (s.ndim < 2 ? 0 : rs[0]) + k * st[0];
            seen[static_cast<size_t>(e)] += 1;
            for (int i = 0; i < s.noperands; ++i)
              if (off[i] + r * (s.ndim < 2 ? 0 : rs[i]) + k * st[i] != offset_of(s, i, e) || !in_one_outer)
                bad[static_cast<size_t>(e)] = 1;
          }
      });
      omp_set_num_threads(before);
      CHECK(std::count(seen.begin(), seen.end(), 1) == numel);
      CHECK(std::count(bad.begin(), bad.end(), 1) == 0);
    }
  }
}
