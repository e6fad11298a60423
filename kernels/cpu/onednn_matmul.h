// Mirrors aten/src/ATen/native/mkldnn/Matmul.cpp (oneDNN matmul): one batched, strided matrix
// product through oneDNN's matmul primitive, created once per problem (shape, strides, data
// type, alpha, beta, bias) and cached. oneDNN picks the instruction set at run time (AVX2,
// AVX-512, AMX), so the same binary serves every x86 machine; where it has only its reference
// implementation for a problem (bf16 on a CPU without bf16 instructions, a broadcast batch),
// matmul() declines and the caller falls back to OpenBLAS/Eigen.
#pragma once

#include "kernels/cpu/gemm.h"

namespace remat::kernels::cpu::onednn {

enum class DataType { Float, BFloat16 };

// Whether remat was built with oneDNN (REMAT_USE_ONEDNN).
bool built();

// Runs p (see StridedGemm) with oneDNN and returns true, or returns false having written
// nothing when oneDNN has no optimised implementation for it here. bias: null or n values of
// the same data type (then alpha == 1 and beta == 0). The primitive is cached per thread.
bool matmul(DataType type, const StridedGemm& p, float alpha, const void* a, const void* b, float beta, void* c,
            const void* bias);

// Whether oneDNN runs AVX-512 (or better: AVX-512 bf16, AMX) code on this CPU.
bool has_avx512();

// Whether oneDNN runs AMX code here: the CPU has its tiles and the kernel lets this process use
// them (a virtual machine may hide them: the same Xeon model came with and without AMX).
bool has_amx();

// The implementation oneDNN chose for p (e.g. "gemm:jit", "brg:avx512_core_amx"), or "" when it
// has none or remat was built without oneDNN. For benchmarks and tests.
const char* implementation(DataType type, const StridedGemm& p);

}  // namespace remat::kernels::cpu::onednn
