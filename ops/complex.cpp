// Mirrors UnaryOps.cpp's conj_physical (its CPU kernel: ATen/native/cpu/UnaryOpsKernel.cpp's
// conj_kernel): the schema from the Def (ops/complex_defs.h), the CPU and Meta kernels. A real
// tensor's conjugate is a copy of it, as PyTorch's.
#include <complex>

#include "engine/dispatch/library.h"
#include "kernels/cpu/complex.h"
#include "ops/complex_defs.h"
#include "ops/cpu_utils.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

void conj_physical_cpu(const char*, const Tensor& out, const Tensor& self) {
  if (!isComplexType(self.dtype())) return copy_into_cpu(out, self);
  auto loop = make_loop(out, {&self});
  if (self.dtype() == kComplexFloat) {
    kernels::cpu::conj_kernel(loop, out.data_ptr<std::complex<float>>(), self.data_ptr<std::complex<float>>());
  } else {
    kernels::cpu::conj_kernel(loop, out.data_ptr<std::complex<double>>(), self.data_ptr<std::complex<double>>());
  }
}

}  // namespace

REMAT_LIBRARY_FRAGMENT(aten, m) { structured::define<structured_conj_physical>(m, {}); }
REMAT_LIBRARY_IMPL(aten, CPU, m) {
  structured::impl<structured_conj_physical, structured::CPUBackend, &conj_physical_cpu>(m);
}
REMAT_LIBRARY_IMPL(aten, Meta, m) { structured::impl_meta<structured_conj_physical>(m); }

}  // namespace remat::ops
