// The x86 SIMD intrinsics (<immintrin.h>) as remat includes them (no PyTorch counterpart:
// ATen/cpu/vec includes them directly). Every remat file that uses intrinsics includes them
// through here, and so does Eigen's (kernels/cpu/eigen.h), before anything else can.
//
// GCC 12.0-12.2 warn "'__Y' may be used uninitialized" (a few times "is used uninitialized")
// at each use of an AVX-512 intrinsic whose pass-through operand is _mm512_undefined_ps() and
// the like (`__m512 __Y = __Y;` in its own avx512fintrin.h), once per function it is inlined
// into: about 640 false reports in a build on an AVX-512 machine, most through Eigen's packet
// math (GCC bug 105593). Marking the header as a system header does not stop them: they are
// raised where the code is inlined. A diagnostic pragma around the header's first inclusion does,
// since GCC checks the pragmas at each frame of the inlining chain and every such chain ends in
// the intrinsics' code. Only these two warnings, only in that code: remat's own keep every warning.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>  // IWYU pragma: export
#pragma GCC diagnostic pop
#endif
