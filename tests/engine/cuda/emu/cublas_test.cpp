// Tests of engine/cuda/emu/cublas.cpp: cuBLAS's argument checks and its GEMM (column-major,
// transposes, leading dimensions, strided batches, f32/f64/bf16/f16, TF32) against a plain
// reference computed here in double.
#include <catch2/catch.hpp>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/bfloat16.h"

namespace {

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { REQUIRE(cudaMalloc(&ptr, bytes) == cudaSuccess); }
  ~DeviceBuffer() { (void)cudaFree(ptr); }
};

// C (m x n, ldc) = alpha op(A) op(B) + beta C, column-major, in double.
std::vector<double> reference(bool ta, bool tb, int m, int n, int k, double alpha, const std::vector<double>& a,
                              int lda, const std::vector<double>& b, int ldb, double beta, std::vector<double> c,
                              int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double acc = 0;
      for (int p = 0; p < k; ++p) acc += (ta ? a[p + i * lda] : a[i + p * lda]) * (tb ? b[j + p * ldb] : b[p + j * ldb]);
      c[i + j * ldc] = alpha * acc + (beta != 0 ? beta * c[i + j * ldc] : 0.0);
    }
  return c;
}

std::vector<double> values(size_t n, double scale) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37 * static_cast<double>(i) + 0.1);
  return v;
}

}  // namespace

TEST_CASE("emulated cuBLAS: argument checks give cuBLAS's statuses", "[cuda_emu]") {
  cublasHandle_t h;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  DeviceBuffer a(64 * 4), b(64 * 4), c(64 * 4);
  const float one = 1, zero = 0;
  auto gemm = [&](int m, int n, int k, int lda, int ldb, int ldc, cublasOperation_t ta = CUBLAS_OP_N,
                  cudaDataType_t type = CUDA_R_32F, cublasComputeType_t compute = CUBLAS_COMPUTE_32F) {
    return cublasGemmEx(h, ta, CUBLAS_OP_N, m, n, k, &one, a.ptr, type, lda, b.ptr, type, ldb, &zero, c.ptr, type, ldc,
                        compute, CUBLAS_GEMM_DEFAULT);
  };
  CHECK(gemm(4, 4, 4, 4, 4, 4) == CUBLAS_STATUS_SUCCESS);
  CHECK(gemm(4, 4, 4, 3, 4, 4) == CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  CHECK(gemm(4, 4, 4, 4, 3, 4) == CUBLAS_STATUS_INVALID_VALUE);  // ldb < k
  CHECK(gemm(4, 4, 4, 4, 4, 3) == CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
  CHECK(gemm(4, 4, 2, 2, 4, 4, CUBLAS_OP_T) == CUBLAS_STATUS_SUCCESS);  // op(A) = A^T: lda >= k
  CHECK(gemm(4, 4, 2, 1, 4, 4, CUBLAS_OP_T) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(gemm(-1, 4, 4, 4, 4, 4) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(gemm(4, 4, 4, 4, 4, 4, CUBLAS_OP_N, CUDA_R_16BF, CUBLAS_COMPUTE_64F) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a.ptr, CUDA_R_32F, 2, 4, b.ptr,
                                   CUDA_R_32F, 2, 4, &zero, c.ptr, CUDA_R_32F, 2, 4, -1, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetWorkspace(h, static_cast<char*>(a.ptr) + 4, 16) == CUBLAS_STATUS_INVALID_VALUE);  // misaligned
  CHECK(cublasSetMathMode(h, static_cast<cublasMath_t>(99)) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE)) == "CUBLAS_STATUS_INVALID_VALUE");
  CHECK(std::string(cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)) == "the functionality requested is not supported");
  REQUIRE(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasSetStream(h, nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("emulated cuBLAS: an operand in host memory is an illegal address at the next synchronise", "[cuda_emu]") {
  cublasHandle_t h;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  DeviceBuffer b(16), c(16);
  std::vector<float> host_a(4, 1.0f);
  const float one = 1, zero = 0;
  CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, host_a.data(), CUDA_R_32F, 2, b.ptr, CUDA_R_32F, 2,
                     &zero, c.ptr, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  const cudaError_t err = cudaDeviceSynchronize();
  CHECK(err == cudaErrorIllegalAddress);
  CHECK(std::string(cudaGetErrorString(err)) == "an illegal memory access was encountered");
  REQUIRE(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
}

TEST_CASE("emulated cuBLAS: GEMMs with transposes, leading dimensions and batches match the reference",
          "[cuda_emu]") {
  cublasHandle_t h;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  const int m = 5, n = 3, k = 7, batch = 2;
  for (cudaDataType_t type : {CUDA_R_32F, CUDA_R_64F, CUDA_R_16BF, CUDA_R_16F}) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool ta = variant & 1, tb = variant & 2;
      const int lda = (ta ? k : m) + 2, ldb = (tb ? n : k) + 1, ldc = m + 3;
      const long long sa = static_cast<long long>(lda) * (ta ? m : k) + 5, sb = static_cast<long long>(ldb) * (tb ? k : n),
                      sc = static_cast<long long>(ldc) * n + 1;
      const double alpha = 0.75, beta = variant == 3 ? 0.0 : -0.5;
      auto a = values(static_cast<size_t>(sa * batch), 1.0), b = values(static_cast<size_t>(sb * batch), 0.5),
           c = values(static_cast<size_t>(sc * batch), 2.0);
      const size_t es = type == CUDA_R_64F ? 8 : type == CUDA_R_32F ? 4 : 2;
      // Round the inputs to the type first, so the reference sees what the GEMM sees.
      auto pack = [&](std::vector<double>& v) {
        std::vector<char> bytes(v.size() * es);
        for (size_t i = 0; i < v.size(); ++i) {
          if (type == CUDA_R_64F) {
            std::memcpy(&bytes[i * 8], &v[i], 8);
          } else if (type == CUDA_R_32F) {
            const float f = static_cast<float>(v[i]);
            v[i] = f;
            std::memcpy(&bytes[i * 4], &f, 4);
          } else if (type == CUDA_R_16BF) {
            const remat::BFloat16 x(static_cast<float>(v[i]));
            v[i] = static_cast<float>(x);
            std::memcpy(&bytes[i * 2], &x.bits, 2);
          } else {
            const remat::Half x(static_cast<float>(v[i]));
            v[i] = static_cast<float>(x);
            std::memcpy(&bytes[i * 2], &x.bits, 2);
          }
        }
        return bytes;
      };
      const auto ab = pack(a), bb = pack(b), cb = pack(c);
      DeviceBuffer da(ab.size()), db(bb.size()), dc(cb.size());
      REQUIRE(cudaMemcpy(da.ptr, ab.data(), ab.size(), cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(db.ptr, bb.data(), bb.size(), cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(dc.ptr, cb.data(), cb.size(), cudaMemcpyHostToDevice) == cudaSuccess);
      const float af = static_cast<float>(alpha), bf = static_cast<float>(beta);
      const bool dbl = type == CUDA_R_64F;
      const cublasComputeType_t compute = dbl ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
      REQUIRE(cublasGemmStridedBatchedEx(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                                         dbl ? static_cast<const void*>(&alpha) : &af, da.ptr, type, lda, sa, db.ptr,
                                         type, ldb, sb, dbl ? static_cast<const void*>(&beta) : &bf, dc.ptr, type, ldc,
                                         sc, batch, compute, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
      std::vector<char> out(cb.size());
      REQUIRE(cudaMemcpy(out.data(), dc.ptr, out.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
      const double tol = type == CUDA_R_64F ? 1e-12 : type == CUDA_R_32F ? 1e-5 : type == CUDA_R_16BF ? 1e-2 : 2e-3;
      for (int q = 0; q < batch; ++q) {
        std::vector<double> aq(a.begin() + q * sa, a.begin() + (q + 1) * sa), bq(b.begin() + q * sb, b.begin() + (q + 1) * sb),
            cq(c.begin() + q * sc, c.begin() + (q + 1) * sc);
        const auto expected = reference(ta, tb, m, n, k, alpha, aq, lda, bq, ldb, beta, cq, ldc);
        for (long long i = 0; i < sc; ++i) {
          const size_t at = static_cast<size_t>(q * sc + i);
          double got;
          if (type == CUDA_R_64F) {
            std::memcpy(&got, &out[at * 8], 8);
          } else if (type == CUDA_R_32F) {
            float f;
            std::memcpy(&f, &out[at * 4], 4);
            got = f;
          } else {
            uint16_t bits;
            std::memcpy(&bits, &out[at * 2], 2);
            remat::BFloat16 x;
            remat::Half y;
            x.bits = bits;
            y.bits = bits;
            got = type == CUDA_R_16BF ? static_cast<float>(x) : static_cast<float>(y);
          }
          INFO("type " << type << " variant " << variant << " batch " << q << " element " << i);
          CHECK(std::abs(got - expected[static_cast<size_t>(i)]) <= tol * (1 + std::abs(expected[static_cast<size_t>(i)])));
        }
      }
    }
  }
  REQUIRE(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
}

TEST_CASE("emulated cuBLAS: CUBLAS_COMPUTE_32F_FAST_TF32 rounds the operands to TF32", "[cuda_emu]") {
  cublasHandle_t h;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  const float a = 1.0f + 1.0f / 4096, b = 1.0f;  // 1 + 2^-12: below TF32's 10-bit mantissa
  DeviceBuffer da(4), db(4), dc(4);
  REQUIRE(cudaMemcpy(da.ptr, &a, 4, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(db.ptr, &b, 4, cudaMemcpyHostToDevice) == cudaSuccess);
  const float one = 1, zero = 0;
  float c = 0;
  REQUIRE(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, da.ptr, CUDA_R_32F, 1, db.ptr, CUDA_R_32F, 1, &zero,
                       dc.ptr, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaMemcpy(&c, dc.ptr, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(c == a);
  REQUIRE(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, da.ptr, CUDA_R_32F, 1, db.ptr, CUDA_R_32F, 1, &zero,
                       dc.ptr, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaMemcpy(&c, dc.ptr, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(c == 1.0f);
  REQUIRE(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
}
