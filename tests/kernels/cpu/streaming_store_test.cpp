// Tests kernels/cpu/streaming_store.h: the streamed copy moves every byte (heads before the first
// whole line, four-line trips, single lines, tails) and nothing outside its range; the alignment
// helper's counts; the threshold.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/streaming_store.h"

namespace cpu = remat::kernels::cpu;

TEST_CASE("copy_bytes_streaming copies every byte at every alignment and length, and nothing else", "[streaming_store]") {
  constexpr size_t kGuard = 64;
  std::vector<unsigned char> src(1200 + 64), dst(1200 + 64 + 2 * kGuard);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  // the 64-byte-aligned start inside dst (a vector's data is only 16-byte aligned)
  const size_t base = kGuard + ((64 - reinterpret_cast<uintptr_t>(dst.data() + kGuard) % 64) % 64);
  int64_t wrong = 0, touched = 0;
  for (size_t dst_off : {size_t(0), size_t(1), size_t(4), size_t(32), size_t(63)}) {
    for (size_t src_off : {size_t(0), size_t(3), size_t(16)}) {
      // 0, shorter than a line, exactly lines, lines plus a tail, four-line trips with single lines after
      for (size_t n : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65), size_t(255), size_t(256), size_t(257),
                       size_t(575), size_t(1000)}) {
        std::memset(dst.data(), 0xAB, dst.size());
        unsigned char* d = dst.data() + base - kGuard + dst_off;
        cpu::copy_bytes_streaming(d, src.data() + src_off, n);
        cpu::stream_fence();
        wrong += std::memcmp(d, src.data() + src_off, n) != 0;
        for (unsigned char* p = dst.data(); p < d; ++p) touched += *p != 0xAB;
        for (unsigned char* p = d + n; p < dst.data() + dst.size(); ++p) touched += *p != 0xAB;
      }
    }
  }
  CHECK(wrong == 0);
  CHECK(touched == 0);
}

TEST_CASE("elements_to_alignment counts the elements before the next multiple of the alignment", "[streaming_store]") {
  alignas(64) float f[64] = {};
  CHECK(cpu::elements_to_alignment(f, 64, 100) == 0);
  CHECK(cpu::elements_to_alignment(f + 1, 64, 100) == 15);
  CHECK(cpu::elements_to_alignment(f + 15, 64, 100) == 1);
  CHECK(cpu::elements_to_alignment(f + 1, 64, 4) == 4);  // the run ends first
  CHECK(cpu::elements_to_alignment(f + 8, 32, 100) == 0);
  // a float that does not start on 4 bytes never reaches 64: every element takes an ordinary store
  const float* odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(f) + 2);
  CHECK(cpu::elements_to_alignment(odd, 64, 100) == 100);
}

TEST_CASE("stream_output streams from kStreamStoreBytes moved, where the CPU has AVX-512", "[streaming_store]") {
  CHECK_FALSE(cpu::stream_output(cpu::kStreamStoreBytes - 1));
  CHECK_FALSE(cpu::stream_output(0));
#if defined(__AVX512F__)
  CHECK(cpu::stream_output(cpu::kStreamStoreBytes));
#else
  CHECK_FALSE(cpu::stream_output(cpu::kStreamStoreBytes));
#endif
}
