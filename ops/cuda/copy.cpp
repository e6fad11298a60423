// Mirrors ATen/native/cuda/Copy.cu (copy_ within a device and across host and devices),
// TensorConversions (_to_copy), FillKernel.cu, TensorFactories (zeros_like, ones_like),
// Shape.cu (cat), TriangularOps.cu (triu) and slice_backward on CUDA: the kernels of the Defs of
// ops/copy_defs.h, registered from them (ops/structured.h). A copy between the host and a device
// goes through the allocators' copy functions (synchronous: the host side is readable or
// reusable when they return).
#include <cuda_runtime_api.h>

#include <algorithm>

#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/cuda/cuda_stream.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/copy.h"
#include "ops/copy_defs.h"
#include "ops/copy_kernels.h"
#include "ops/cpu_utils.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// copy_'s and _to_copy's backend: their tensors may be on the host or on several devices, so the
// kernels put their own device guards.
struct CrossDeviceBackend {
  static Tensor empty(const TensorMeta& m) {
    if (!m.device.is_cuda()) return empty_from(m);
    cuda::CUDAGuard guard(m.device);
    return empty_from(m);
  }
  template <class F>
  static void run(const Tensor&, const F& kernel) { kernel(); }
};

// The bytes of a contiguous CUDA tensor into out (as big, on the host or another device).
void transfer(const Tensor& contiguous_src, const Tensor& out) {
  const size_t nbytes = static_cast<size_t>(contiguous_src.nbytes());
  if (nbytes == 0) return;
  const Device from = contiguous_src.device(), to = out.device();
  if (to.is_cpu()) {
    get_allocator(from)->copy_to_host(out.data_ptr(), contiguous_src.data_ptr(), nbytes);
    return;
  }
  // device to device: after the source's queued work, before the destination's next work
  cuda::getCurrentCUDAStream(from.index).synchronize();
  REMAT_CUDA_CHECK(cudaMemcpyPeer(out.data_ptr(), to.index, contiguous_src.data_ptr(), from.index, nbytes));
}
Tensor transfer(const Tensor& contiguous_src, const Device& to) {
  Tensor out = make_empty(contiguous_src.sizes(), contiguous_src.dtype(), to);
  transfer(contiguous_src, out);
  return out;
}

// triu's kernel (TORCH_IMPL_FUNC): out has the meta function's geometry and is not empty; the
// device guard is out's (structured::CUDABackend). The others are ops/copy_kernels.h's.
void triu_impl(const char*, const Tensor& out, const Tensor& self, int64_t diagonal) {
  copy_into_cuda(out, self);
  const int64_t rows = self.sizes()[self.dim() - 2], cols = self.sizes()[self.dim() - 1];
  const int64_t batch = self.numel() / std::max<int64_t>(rows * cols, 1);
  kc::triu_(out.dtype(), out.data_ptr(), batch, rows, cols, diagonal, cuda_stream(out.device()));
}

// What ops/copy_kernels.h's kernels and registration need of CUDA.
struct CUDACopyOps {
  using Backend = structured::CUDABackend;
  static bool cat_contiguous(const Tensor&, const std::vector<Tensor>&, int64_t) { return false; }  // strided copies
  static void fill(const Tensor& out, double value) { fill_cuda(out, value); }
  static void copy_into(const Tensor& out, const Tensor& src) { copy_into_cuda(out, src); }
  static bool copy_across(const Tensor& self, const Tensor& src) {
    if (self.device().is_cpu() && src.is_cuda()) {  // device -> host: stage on the host first
      Tensor staged;
      {
        cuda::CUDAGuard guard(src.device());
        staged = transfer(contiguous_cuda(src), Device{kCPU});
      }
      copy_into_cpu(self, staged);
    } else if (self.is_cuda() && src.device().is_cpu()) {  // host -> device: stage on the device
      cuda::CUDAGuard guard(self.device());
      Tensor host = contiguous_cpu(src);
      Tensor staged = make_empty(host.sizes(), host.dtype(), self.device());
      if (host.nbytes() > 0)
        get_allocator(self.device())->copy_from_host(staged.data_ptr(), host.data_ptr(), static_cast<size_t>(host.nbytes()));
      copy_into_cuda(self, staged);
    } else if (self.is_cuda() && src.is_cuda()) {  // another device
      Tensor staged;
      {
        cuda::CUDAGuard guard(src.device());
        staged = transfer(contiguous_cuda(src), self.device());
      }
      copy_into_cuda(self, staged);
    } else {
      return false;
    }
    return true;
  }
  static void move_out(const Tensor& converted, const Tensor& out) { transfer(converted, out); }
  static constexpr auto triu = &triu_impl;
};

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  impl_copy_kernels<CUDACopyOps, CrossDeviceBackend>(m);
}

}  // namespace remat::ops
