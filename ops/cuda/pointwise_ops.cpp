// Mirrors ATen/native/cuda/PointwiseOpsKernel.cu (addcmul_, addcdiv_), Lerp.cu (lerp_) and
// MaxMinElementwiseKernel.cu (maximum, minimum) registration: the CUDA kernels of the ops of
// ops/pointwise_ops.cpp, with the same meta functions and kernels/cuda/pointwise_ops.h.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/pointwise_ops.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Tensor addc_cuda(const char* op, kc::AddcOp aop, const Tensor& self, const Tensor& t1, const Tensor& t2,
                 double value) {
  inplace_update_meta(op, self, {&t1, &t2});
  if (self.numel() > 0) {
    cuda::CUDAGuard guard(self.device());
    Tensor a = cast_cuda(t1, self.dtype()), b = cast_cuda(t2, self.dtype());
    kc::addc(aop, self.dtype(), cuda_loop(self, {&self, &a, &b}), self.data_ptr(), self.data_ptr(), a.data_ptr(),
             b.data_ptr(), value, cuda_stream(self.device()));
  }
  self.impl()->bump_version();
  return self;
}
Tensor addcmul__cuda(const Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  return addc_cuda("aten::addcmul_", kc::AddcOp::Mul, self, t1, t2, value);
}
Tensor addcdiv__cuda(const Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  return addc_cuda("aten::addcdiv_", kc::AddcOp::Div, self, t1, t2, value);
}

Tensor lerp__cuda(const Tensor& self, const Tensor& end, double weight) {
  inplace_update_meta("aten::lerp_", self, {&end});
  if (self.numel() > 0) {
    cuda::CUDAGuard guard(self.device());
    Tensor e = cast_cuda(end, self.dtype());
    kc::lerp(self.dtype(), cuda_loop(self, {&self, &e}), self.data_ptr(), self.data_ptr(), e.data_ptr(), weight,
             cuda_stream(self.device()));
  }
  self.impl()->bump_version();
  return self;
}

Tensor extremum_cuda(const char* op, bool is_max, const Tensor& a, const Tensor& b) {
  TensorMeta m = extremum_meta(op, a, b);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  Tensor ac = cast_cuda(a, m.dtype), bc = cast_cuda(b, m.dtype);
  kc::extremum(is_max, m.dtype, cuda_loop(out, {&ac, &bc}), out.data_ptr(), ac.data_ptr(), bc.data_ptr(),
               cuda_stream(m.device));
  return out;
}
Tensor maximum_cuda(const Tensor& a, const Tensor& b) { return extremum_cuda("aten::maximum", true, a, b); }
Tensor minimum_cuda(const Tensor& a, const Tensor& b) { return extremum_cuda("aten::minimum", false, a, b); }

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("addcmul_", REMAT_FN(addcmul__cuda));
  m.impl("addcdiv_", REMAT_FN(addcdiv__cuda));
  m.impl("lerp_.Scalar", REMAT_FN(lerp__cuda));
  m.impl("maximum", REMAT_FN(maximum_cuda));
  m.impl("minimum", REMAT_FN(minimum_cuda));
}

}  // namespace remat::ops
