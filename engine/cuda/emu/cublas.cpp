// cuBLAS on the emulated device: see include/cublas_v2.h. The GEMM is a plain reference in
// column-major order (what cuBLAS computes, not how fast): operands converted to the compute
// type (rounded to TF32 for CUBLAS_COMPUTE_32F_FAST_TF32), products summed over k in order,
// alpha and beta applied, the result rounded to C's type. beta == 0 never reads C.
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/core/bfloat16.h"
#include "engine/cuda/emu/device_memory.h"
#include "engine/cuda/emu/emulation.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace remat::cuda_emu {

namespace {

std::mutex handles_mu;
std::set<cublasContext*>& handles() {
  static auto* s = new std::set<cublasContext*>();
  return *s;
}

bool live(cublasHandle_t h) {
  std::lock_guard<std::mutex> lock(handles_mu);
  return h != nullptr && handles().count(h) != 0;
}

size_t element_size(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
  }
  return 0;
}

double load(const void* p, int64_t i, cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_64F: return static_cast<const double*>(p)[i];
    case CUDA_R_16F: return remat::Half::to_float(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16BF: {
      const uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16;
      float f;
      std::memcpy(&f, &u, sizeof f);
      return f;
    }
  }
  return 0;
}

void store(void* p, int64_t i, cudaDataType_t t, double v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case CUDA_R_64F: static_cast<double*>(p)[i] = v; return;
    case CUDA_R_16F: static_cast<uint16_t*>(p)[i] = remat::Half::from_float(static_cast<float>(v)); return;
    case CUDA_R_16BF: {
      const float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      static_cast<uint16_t*>(p)[i] = (u & 0x7fffffffu) > 0x7f800000u
                                         ? uint16_t{0x7fff}
                                         : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      return;
    }
  }
}

// TF32: float with a 10-bit mantissa, rounded to nearest even.
float to_tf32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool supported(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cublasComputeType_t compute) {
  if (a != b || b != c) return false;
  switch (a) {
    case CUDA_R_32F:
      return compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
             compute == CUBLAS_COMPUTE_32F_FAST_16F || compute == CUBLAS_COMPUTE_32F_FAST_16BF;
    case CUDA_R_64F: return compute == CUBLAS_COMPUTE_64F;
    case CUDA_R_16BF: return compute == CUBLAS_COMPUTE_32F;
    case CUDA_R_16F: return compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_16F;
  }
  return false;
}

struct Gemm {
  cublasOperation_t ta, tb;
  int m, n, k;
  double alpha, beta;
  const void* a;
  const void* b;
  void* c;
  cudaDataType_t type;
  int lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int batch;
  cublasComputeType_t compute;
};

template <class Acc>
void run_gemm(const Gemm& g) {
  const bool tf32 = g.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  std::vector<Acc> a(static_cast<size_t>(g.m) * g.k), b(static_cast<size_t>(g.n) * g.k);
  for (int q = 0; q < g.batch; ++q) {
    const int64_t oa = q * g.stride_a, ob = q * g.stride_b, oc = q * g.stride_c;
    // op(A) as rows [m][k] and op(B) as rows [n][k], in the compute type.
    for (int i = 0; i < g.m; ++i)
      for (int p = 0; p < g.k; ++p) {
        const int64_t at = g.ta == CUBLAS_OP_N ? i + static_cast<int64_t>(p) * g.lda : p + static_cast<int64_t>(i) * g.lda;
        Acc v = static_cast<Acc>(load(g.a, oa + at, g.type));
        a[static_cast<size_t>(i) * g.k + p] = tf32 ? static_cast<Acc>(to_tf32(static_cast<float>(v))) : v;
      }
    for (int j = 0; j < g.n; ++j)
      for (int p = 0; p < g.k; ++p) {
        const int64_t at = g.tb == CUBLAS_OP_N ? p + static_cast<int64_t>(j) * g.ldb : j + static_cast<int64_t>(p) * g.ldb;
        Acc v = static_cast<Acc>(load(g.b, ob + at, g.type));
        b[static_cast<size_t>(j) * g.k + p] = tf32 ? static_cast<Acc>(to_tf32(static_cast<float>(v))) : v;
      }
    const Acc alpha = static_cast<Acc>(g.alpha), beta = static_cast<Acc>(g.beta);
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        const Acc* ar = &a[static_cast<size_t>(i) * g.k];
        const Acc* br = &b[static_cast<size_t>(j) * g.k];
        Acc acc = 0;
        for (int p = 0; p < g.k; ++p) acc += ar[p] * br[p];
        const int64_t at = oc + i + static_cast<int64_t>(j) * g.ldc;
        Acc out = alpha * acc;
        if (g.beta != 0) out += beta * static_cast<Acc>(load(g.c, at, g.type));
        store(g.c, at, g.type, static_cast<double>(out));
      }
  }
}

// The extent of a column-major operand: the last element any batch touches, plus one.
bool is_device_range(const void* p, cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, long long stride,
                     int batch) {
  if (rows == 0 || cols == 0 || batch == 0) return true;
  const int64_t last = (rows - 1) + (cols - 1) * ld + static_cast<int64_t>(batch - 1) * stride;
  Allocation a;
  return find_allocation(p, static_cast<size_t>(last + 1) * element_size(t), &a) && a.kind == MemoryKind::Device;
}

cublasStatus_t gemm(cublasHandle_t h, Gemm g, const void* alpha, const void* beta) {
  if (!live(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if ((g.ta != CUBLAS_OP_N && g.ta != CUBLAS_OP_T) || (g.tb != CUBLAS_OP_N && g.tb != CUBLAS_OP_T)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const int rows_a = g.ta == CUBLAS_OP_N ? g.m : g.k, rows_b = g.tb == CUBLAS_OP_N ? g.k : g.n;
  if (g.lda < std::max(1, rows_a) || g.ldb < std::max(1, rows_b) || g.ldc < std::max(1, g.m)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  // Host pointer mode: the scalars are read now, in the compute type's precision.
  switch (g.compute) {
    case CUBLAS_COMPUTE_64F:
      g.alpha = *static_cast<const double*>(alpha);
      g.beta = *static_cast<const double*>(beta);
      break;
    case CUBLAS_COMPUTE_16F:
      g.alpha = remat::Half::to_float(*static_cast<const uint16_t*>(alpha));
      g.beta = remat::Half::to_float(*static_cast<const uint16_t*>(beta));
      break;
    default:
      g.alpha = *static_cast<const float*>(alpha);
      g.beta = *static_cast<const float*>(beta);
  }
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;
  const int cols_a = g.ta == CUBLAS_OP_N ? g.k : g.m, cols_b = g.tb == CUBLAS_OP_N ? g.n : g.k;
  const cudaError_t err = enqueue(h->stream, [g, rows_a, cols_a, rows_b, cols_b](std::string& message) {
    // On a GPU an operand outside device memory is an illegal address, reported asynchronously.
    if (!is_device_range(g.a, g.type, rows_a, cols_a, g.lda, g.stride_a, g.batch) ||
        !is_device_range(g.b, g.type, rows_b, cols_b, g.ldb, g.stride_b, g.batch) ||
        !is_device_range(g.c, g.type, g.m, g.n, g.ldc, g.stride_c, g.batch)) {
      message = "cuBLAS GEMM: an operand is not inside device memory (m=" + std::to_string(g.m) +
                ", n=" + std::to_string(g.n) + ", k=" + std::to_string(g.k) + ")";
      return cudaErrorIllegalAddress;
    }
    if (g.compute == CUBLAS_COMPUTE_64F) {
      run_gemm<double>(g);
    } else {
      run_gemm<float>(g);
    }
    return cudaSuccess;
  });
  return err == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace

}  // namespace remat::cuda_emu

using namespace remat::cuda_emu;

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* h = new cublasContext();
  std::lock_guard<std::mutex> lock(handles_mu);
  handles().insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  std::lock_guard<std::mutex> lock(handles_mu);
  if (handle == nullptr || handles().erase(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  handle->workspace = nullptr;  // as cuBLAS: a new stream goes back to the default workspace
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TENSOR_OP_MATH && mode != CUBLAS_PEDANTIC_MATH &&
      mode != CUBLAS_TF32_TENSOR_OP_MATH) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  // cuBLAS wants 256-byte alignment, and device memory.
  if ((workspace == nullptr && bytes != 0) || reinterpret_cast<uintptr_t>(workspace) % 256 != 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  Allocation a;
  if (workspace != nullptr && (!find_allocation(workspace, bytes, &a) || a.kind != MemoryKind::Device)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
#define REMAT_EMU_NAME(E) \
  case E: return #E;
    REMAT_EMU_NAME(CUBLAS_STATUS_SUCCESS)
    REMAT_EMU_NAME(CUBLAS_STATUS_NOT_INITIALIZED)
    REMAT_EMU_NAME(CUBLAS_STATUS_ALLOC_FAILED)
    REMAT_EMU_NAME(CUBLAS_STATUS_INVALID_VALUE)
    REMAT_EMU_NAME(CUBLAS_STATUS_ARCH_MISMATCH)
    REMAT_EMU_NAME(CUBLAS_STATUS_MAPPING_ERROR)
    REMAT_EMU_NAME(CUBLAS_STATUS_EXECUTION_FAILED)
    REMAT_EMU_NAME(CUBLAS_STATUS_INTERNAL_ERROR)
    REMAT_EMU_NAME(CUBLAS_STATUS_NOT_SUPPORTED)
    REMAT_EMU_NAME(CUBLAS_STATUS_LICENSE_ERROR)
#undef REMAT_EMU_NAME
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "an error was detected when checking the current licensing";
  }
  return "unknown error";
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType_t Atype, int lda, const void* B,
                            cudaDataType_t Btype, int ldb, const void* beta, void* C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t /*algo*/) {
  if (!supported(Atype, Btype, Ctype, computeType)) return live(handle) ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_NOT_INITIALIZED;
  return gemm(handle, Gemm{transa, transb, m, n, k, 0, 0, A, B, C, Atype, lda, ldb, ldc, 0, 0, 0, 1, computeType},
              alpha, beta);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType_t Atype,
                                          int lda, long long strideA, const void* B, cudaDataType_t Btype, int ldb,
                                          long long strideB, const void* beta, void* C, cudaDataType_t Ctype, int ldc,
                                          long long strideC, int batchCount, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t /*algo*/) {
  if (!supported(Atype, Btype, Ctype, computeType)) return live(handle) ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_NOT_INITIALIZED;
  return gemm(handle,
              Gemm{transa, transb, m, n, k, 0, 0, A, B, C, Atype, lda, ldb, ldc, strideA, strideB, strideC, batchCount,
                   computeType},
              alpha, beta);
}

}  // extern "C"
