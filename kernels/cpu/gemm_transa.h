// Mirrors ATen/native/BlasKernel.cpp's gemm_transa_ (C = A^T B read in place, without packing A),
// as an AVX-512 register-tiled kernel for one case oneDNN runs slowly: a batch of products with a
// transposed a and a short reduction, attention's P^T dy and dS^T q in backward.
//
// A transposed a, stored [k, m], is already laid out the way a GEMM packs it (each reduction step's
// m values side by side), so the kernel reads it where it lies: for each reduction step it loads a
// row of b (up to 64 floats, 4 vectors) and broadcasts 6 values of a's row, 24 fused multiply-adds
// into 24 accumulators held in registers. oneDNN 2.6's brgemm copies such an a before every product.
// What it gains over oneDNN comes from the memory side: while one batch entry is multiplied, its
// loop asks for the next entry's operands a line at a time (they come from L3 or memory in a step);
// and a b whose rows lie far apart (the heads of dy or q side by side, a row stride of C floats) is
// copied together a block at a time, since such rows share a few of L1's sets and evict each other.
// At the GPT's [32, 128 x 128]^T [128 x 64] (Intel Xeon model 207 without AMX, bench/ops beside
// PyTorch 2.15, 5 rounds): 1 thread oneDNN 0.557 ms (121 GFLOP/s, 1.13 x PyTorch's MKL) -> 0.450 ms
// (149, 0.90 x); 2 threads 0.268 -> 0.237 ms (1.17 -> 1.00 x). The kernel without the prefetch ran
// as fast as oneDNN (0.54 ms); with dy's rows C apart and no copy, slower (0.67 against 0.60).
// AMD Zen 4 (EPYC family 25 model 17), same rows: 1 thread 0.654-0.675 -> 0.633-0.643 ms, 2 threads
// 0.356-0.357 -> 0.304-0.321; the head view (dy's rows C apart) 0.70-0.75 -> 0.65-0.70 and 0.38-0.41 -> 0.32-0.35.
#pragma once

#include "kernels/cpu/gemm.h"

namespace remat::kernels::cpu {

// Whether gemm_transa_batched can run this float problem: an AVX-512 build, a batch of at least 2,
// a column-major a (row stride 1), row-major b and c, and k <= kTransaMaxK (a [k, 64] block of b
// stays in L1 across a batch entry's rows).
constexpr int64_t kTransaMaxK = 256;
bool gemm_transa_fits(const StridedGemm& p);

// Whether gemm_batched<float> runs it here: it fits, on a CPU where the kernel was measured faster
// than oneDNN (Intel; AMD Zen 4). A function of the problem and the machine only, so a problem
// always takes the same path (the same bits).
bool gemm_transa_applies(const StridedGemm& p);

// c[i] = alpha * a[i] b[i] + beta * c[i] (+ bias on every row) for every batch entry, each output
// element summed over k in order (bitwise the same on any thread count). Requires
// gemm_transa_fits(p); bias as gemm_batched's (alpha 1 and beta 0 with it).
void gemm_transa_batched(const StridedGemm& p, float alpha, const float* a, const float* b, float beta, float* c,
                         const float* bias);

}  // namespace remat::kernels::cpu
