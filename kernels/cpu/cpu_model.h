// Mirrors cpuinfo's microarchitecture query (third_party/cpuinfo, which ATen's CPU capability and
// oneDNN's ISA choice rest on): which x86 core this is, where a kernel's best vector width differs
// between cores that report the same ISA flags.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace remat::kernels::cpu {

#if defined(__x86_64__) || defined(__i386__)
// Whether CPUID leaf 0's vendor string, read as ebx, edx, ecx (four characters each), is this one.
inline bool cpuid_vendor_is(unsigned ebx_want, unsigned edx_want, unsigned ecx_want) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  return ebx == ebx_want && edx == edx_want && ecx == ecx_want;
}
#endif

// AMD's family number (CPUID leaf 1: the base family, plus the extended family where the base is
// 0xF): 0x19 is Zen 3 and Zen 4, 0x1A Zen 5. 0 on another vendor or architecture.
inline unsigned amd_family() {
#if defined(__x86_64__) || defined(__i386__)
  if (!cpuid_vendor_is(0x68747541u, 0x69746e65u, 0x444d4163u)) return 0;  // "Auth" "enti" "cAMD"
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  const unsigned base = (eax >> 8) & 0xF, extended = (eax >> 20) & 0xFF;
  return base == 0xF ? base + extended : base;
#else
  return 0;
#endif
}

// Whether the vendor is Intel ("GenuineIntel"). false on another vendor or architecture.
inline bool intel_cpu() {
#if defined(__x86_64__) || defined(__i386__)
  return cpuid_vendor_is(0x756e6547u, 0x49656e69u, 0x6c65746eu);  // "Genu" "ineI" "ntel"
#else
  return false;
#endif
}

// Whether this is AMD from family 0x19 on (Zen 3 and Zen 4, then Zen 5 and later): where a transpose's
// 512 x 512 blocks and layer_norm's row pairs were measured faster (on Zen 4; Zen 3 not measured).
inline bool amd_family_19h_or_later() { return amd_family() >= 0x19; }

// Whether this is AMD Zen 5 or later (family 0x1A up): 512-bit operations at full width, where Zen 4
// runs them as two 256-bit halves.
inline bool amd_zen5_or_later() { return amd_family() >= 0x1A; }

// Whether float sums (whole-tensor and row sums) read 512 bits a load. AMD Zen 5 (family 0x1A)
// loads and adds 512 bits at full width: [4096, 4096] f32 row sums, 1 thread, 1.11-1.16 ms one
// row at a time that way against 1.42-1.46 ms eight rows at once in 256-bit loads. Zen 4 splits
// 512-bit operations in two halves (there 512-bit loads took 1.1-1.3x as long), and the Intel Xeon
// (AMX) was measured with the 256-bit loops: both keep them.
inline bool float_sums_read_512_bits() {
  static const bool wide = amd_zen5_or_later();
  return wide;
}

}  // namespace remat::kernels::cpu
