// Mirrors ATen/Parallel.h (at::parallel_for over OpenMP): remat's one thread pool is OpenMP's,
// sized to the machine's cores, and shared with OpenBLAS's OpenMP build.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace remat::kernels::cpu {

// Elements below which a loop runs on one thread (thread wake-up costs more than the work).
constexpr int64_t kGrainSize = 32768;

// Rows per parallel task so that one task touches about kGrainSize elements.
inline int64_t rows_grain(int64_t row_len) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row_len, 1)); }

inline int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

inline bool in_parallel_region() {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return false;
#endif
}

// Calls f(begin, end) on disjoint chunks covering [begin, end). Chunks depend only on the range,
// the grain and the thread count, so results are reproducible run to run.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int nthreads = num_threads();
  if (n <= grain_size || nthreads == 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  int64_t max_chunks = (n + grain_size - 1) / grain_size;
  int chunks = static_cast<int>(max_chunks < nthreads ? max_chunks : nthreads);
#pragma omp parallel num_threads(chunks)
  {
#ifdef _OPENMP
    int tid = omp_get_thread_num();
#else
    int tid = 0;
#endif
    int64_t per = (n + chunks - 1) / chunks;
    int64_t b = begin + tid * per;
    int64_t e = b + per < end ? b + per : end;
    if (b < e) f(b, e);
  }
}

}  // namespace remat::kernels::cpu
