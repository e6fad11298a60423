// Raw conversions and copies for backend kernels (no dispatch).
#include "ops/cpu_utils.h"

#include "kernels/cpu/pointwise.h"
#include "ops/dispatch_dtype.h"

namespace remat::ops {

void copy_into_cpu(const Tensor& out, const Tensor& in) {
  if (out.is_meta() || out.numel() == 0) return;
  if (isComplexType(out.dtype()) && in.dtype() == out.dtype())  // two reals per element
    return copy_into_cpu(complex_as_real(out, out.sizes()), complex_as_real(in, out.sizes()));
  auto loop = make_loop(out, {&in});
  REMAT_DISPATCH_ALL_TYPES(out.dtype(), "copy_", [&] {
    using out_t = scalar_t;
    REMAT_DISPATCH_ALL_TYPES(in.dtype(), "copy_", [&] {
      kernels::cpu::copy_kernel(loop, static_cast<out_t*>(out.data_ptr()),
                                static_cast<const scalar_t*>(in.data_ptr()));
    });
  });
}

Tensor cast_cpu(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = make_empty(t.sizes(), dtype, t.device());
  copy_into_cpu(out, t);
  return out;
}

Tensor contiguous_cpu(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = make_empty(t.sizes(), t.dtype(), t.device());
  copy_into_cpu(out, t);
  return out;
}

}  // namespace remat::ops
