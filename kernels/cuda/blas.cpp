// Mirrors ATen/cuda/CUDABlas.cpp (at::cuda::blas::gemm, bgemm over cublasGemmEx and
// cublasGemmStridedBatchedEx) and CublasHandlePool.cpp (one handle per device).
#include "kernels/cuda/blas.h"

#include <cublas_v2.h>

#include <array>
#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "engine/core/error.h"
#include "engine/cuda/cuda_exception.h"

namespace remat::kernels::cuda {

const char* cublas_status_name(int status) { return cublasGetStatusName(static_cast<cublasStatus_t>(status)); }

namespace {

// Checks a cuBLAS call; throws remat::Error naming the call, the status name and its text.
#define REMAT_CUBLAS_CHECK(EXPR)                                                                             \
  do {                                                                                                       \
    const cublasStatus_t remat_status_ = (EXPR);                                                             \
    if (remat_status_ != CUBLAS_STATUS_SUCCESS) {                                                            \
      throw ::remat::Error(::remat::detail::str("cuBLAS error: ", cublasGetStatusName(remat_status_), " (", \
                                                cublasGetStatusString(remat_status_), ") in ", #EXPR, " at ", \
                                                __FILE__, ":", __LINE__));                                   \
    }                                                                                                        \
  } while (0)

std::atomic<bool> tf32_allowed{false};

constexpr int kMaxDevices = 64;

// One handle per device; calls on a device are serialised (a handle carries its stream). Each
// stream gets its own cuBLAS workspace, as PyTorch's handle pool does: GEMMs running at once on
// two streams must not share scratch memory. Workspaces come from cudaMalloc, outside the
// caching allocator's statistics (which count tensors), and live as long as the process.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // what PyTorch gives cuBLAS on Hopper
struct HandlePool {
  std::mutex mutex[kMaxDevices];
  cublasHandle_t handle[kMaxDevices] = {};
  std::map<cudaStream_t, void*> workspace[kMaxDevices];
};

HandlePool& pool() {
  static HandlePool* p = new HandlePool();  // never destroyed: cuBLAS may be gone at exit
  return *p;
}

struct Operands {
  cudaDataType_t type;
  cublasComputeType_t compute;
  bool double_scalars;
};

Operands operands_for(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float:
      return {CUDA_R_32F, tf32_allowed.load() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, false};
    case ScalarType::Double: return {CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case ScalarType::BFloat16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    case ScalarType::Half: return {CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    default: break;
  }
  throw Error(detail::str("\"gemm\" not implemented for '", toString(dtype), "' on CUDA"));
}

int to_int(int64_t v, const char* what) {
  REMAT_CHECK(v >= 0 && v <= std::numeric_limits<int>::max(), "cuBLAS gemm: ", what, " = ", v,
              " does not fit cuBLAS's 32-bit int");
  return static_cast<int>(v);
}

// Runs f(handle) on the current device's handle, bound to stream.
template <class F>
void with_handle(cudaStream_t stream, const F& f) {
  int device = 0;
  REMAT_CUDA_CHECK(cudaGetDevice(&device));
  REMAT_CHECK(device >= 0 && device < kMaxDevices, "cuBLAS: device index ", device, " out of range");
  HandlePool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex[device]);
  if (p.handle[device] == nullptr) REMAT_CUBLAS_CHECK(cublasCreate(&p.handle[device]));
  cublasHandle_t h = p.handle[device];
  REMAT_CUBLAS_CHECK(cublasSetStream(h, stream));  // also resets the workspace to cuBLAS's own
  void*& ws = p.workspace[device][stream];
  if (ws == nullptr) REMAT_CUDA_CHECK(cudaMalloc(&ws, kWorkspaceBytes));
  REMAT_CUBLAS_CHECK(cublasSetWorkspace(h, ws, kWorkspaceBytes));
  // Default math keeps float GEMMs in full float precision (TF32 only through the compute type).
  REMAT_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  f(h);
}

}  // namespace

void set_allow_tf32(bool allow) { tf32_allowed.store(allow); }
bool allow_tf32() { return tf32_allowed.load(); }

void gemm(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc, cudaStream_t stream) {
  gemm_strided_batched(dtype, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1, stream);
}

void gemm_strided_batched(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                          double beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch, cudaStream_t stream) {
  if (m == 0 || n == 0 || batch == 0) return;
  const Operands ops = operands_for(dtype);
  // Column-major view: C^T [n, m] = op(B)^T [n, k] * op(A)^T [k, m]. A row-major [r, c] matrix
  // with row stride ld is a column-major [c, r] matrix with leading dimension ld.
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int im = to_int(m, "m"), in = to_int(n, "n"), ik = to_int(k, "k");
  const int ilda = to_int(lda, "lda"), ildb = to_int(ldb, "ldb"), ildc = to_int(ldc, "ldc");
  const int ibatch = to_int(batch, "batch");
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = ops.double_scalars ? static_cast<const void*>(&alpha) : static_cast<const void*>(&alpha_f);
  const void* beta_p = ops.double_scalars ? static_cast<const void*>(&beta) : static_cast<const void*>(&beta_f);
  with_handle(stream, [&](cublasHandle_t h) {
    if (batch == 1) {
      REMAT_CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, in, im, ik, alpha_p, b, ops.type, ildb, a, ops.type, ilda,
                                      beta_p, c, ops.type, ildc, ops.compute, CUBLAS_GEMM_DEFAULT));
    } else {
      REMAT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, in, im, ik, alpha_p, b, ops.type, ildb,
                                                    static_cast<long long>(stride_b), a, ops.type, ilda,
                                                    static_cast<long long>(stride_a), beta_p, c, ops.type, ildc,
                                                    static_cast<long long>(stride_c), ibatch, ops.compute,
                                                    CUBLAS_GEMM_DEFAULT));
    }
  });
}

}  // namespace remat::kernels::cuda
