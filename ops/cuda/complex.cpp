// Mirrors UnaryComplexKernels.cu's conj_physical: its CUDA kernel, registered at the CUDA key from
// the Def (ops/complex_defs.h); a real tensor's conjugate is a copy of it.
#include "engine/dispatch/library.h"
#include "kernels/cuda/complex.h"
#include "ops/complex_defs.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

void conj_physical_cuda(const char*, const Tensor& out, const Tensor& self) {
  if (!isComplexType(self.dtype())) return copy_into_cuda(out, self);
  kernels::cuda::complex_conj(self.dtype(), cuda_loop(out, {&self}), out.data_ptr(), self.data_ptr(),
                              cuda_stream(out.device()));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  structured::impl<structured_conj_physical, structured::CUDABackend, &conj_physical_cuda>(m);
}

}  // namespace remat::ops
