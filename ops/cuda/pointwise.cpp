// Mirrors the CUDA TORCH_IMPL_FUNCs of ATen/native/cuda/{BinaryArithmeticKernel,UnaryOpsKernel,
// Activation*,CompareEQKernel,TensorCompare,MaxMinElementwiseKernel,PointwiseOpsKernel,Lerp}.cu:
// one out= kernel per elementwise op of ops/pointwise.def over the loops of
// kernels/cuda/pointwise.h and pointwise_ops.h, registered at the CUDA key from that table. The
// meta function has run when a kernel starts (ops/structured.h), and out is not empty; the device
// guard is CUDABackend's (ops/cuda/cuda_utils.h).
#include "engine/dispatch/library.h"
#include "kernels/cuda/complex.h"
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/pointwise_ops.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/pointwise_defs.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// The CPU kernels' dtype error ("\"aten::x\" not implemented for 'Bool'"), before any launch.
void require_numeric(ScalarType t, const char* op) {
  if (t == kBool) REMAT_DTYPE_ERROR(t, op);
}

// ---------------------------------------------------------------------------------------------
// the table's kinds: unary, binary, tensor op scalar
// ---------------------------------------------------------------------------------------------

template <kc::UnaryOp Op>
void unary_cuda(const char* op, const Tensor& out, const Tensor& a) {
  require_numeric(out.dtype(), op);
  kc::unary(Op, out.dtype(), cuda_loop(out, {&a}), out.data_ptr(), a.data_ptr(), cuda_stream(out.device()));
}

template <kc::BinaryOp Op>
void binary_cuda(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if constexpr (Op == kc::BinaryOp::Mul) {
    if (isComplexType(out.dtype())) {  // mul alone takes complex tensors (ops/pointwise_defs.h)
      REMAT_CHECK(a.dtype() == out.dtype() && b.dtype() == out.dtype(), op,
                  ": complex operands must have one dtype (got ", toString(a.dtype()), " and ", toString(b.dtype()), ")");
      kc::complex_mul(out.dtype(), cuda_loop(out, {&a, &b}), out.data_ptr(), a.data_ptr(), b.data_ptr(),
                      cuda_stream(out.device()));
      return;
    }
  }
  require_numeric(out.dtype(), op);
  Tensor ac = cast_cuda(a, out.dtype()), bc = cast_cuda(b, out.dtype());
  kc::binary(Op, out.dtype(), cuda_loop(out, {&ac, &bc}), out.data_ptr(), ac.data_ptr(), bc.data_ptr(),
             cuda_stream(out.device()));
}

void scalar_op_cuda(const char* op, kc::ScalarOp sop, const Tensor& out, const Tensor& a, double s) {
  require_numeric(out.dtype(), op);
  Tensor ac = cast_cuda(a, out.dtype());
  kc::scalar_op(sop, out.dtype(), cuda_loop(out, {&ac}), out.data_ptr(), ac.data_ptr(), s, cuda_stream(out.device()));
}

template <kc::ScalarOp Op>
void scalar_cuda(const char* op, const Tensor& out, const Tensor& a, double s) {
  scalar_op_cuda(op, Op, out, a, s);
}

// ---------------------------------------------------------------------------------------------
// ops with arguments of their own
// ---------------------------------------------------------------------------------------------

void pow_cuda(const char* op, const Tensor& out, const Tensor& a, double e) {
  scalar_op_cuda(op, e == 2.0 ? kc::ScalarOp::Square : kc::ScalarOp::Pow, out, a, e);
}

void gelu_cuda(const char* op, const Tensor& out, const Tensor& a, const std::string& approximate) {
  require_numeric(out.dtype(), op);
  kc::unary(approximate == "tanh" ? kc::UnaryOp::GeluTanh : kc::UnaryOp::Gelu, out.dtype(), cuda_loop(out, {&a}),
            out.data_ptr(), a.data_ptr(), cuda_stream(out.device()));
}

template <bool kMax>
void extremum_cuda(const char*, const Tensor& out, const Tensor& a, const Tensor& b) {
  Tensor ac = cast_cuda(a, out.dtype()), bc = cast_cuda(b, out.dtype());
  kc::extremum(kMax, out.dtype(), cuda_loop(out, {&ac, &bc}), out.data_ptr(), ac.data_ptr(), bc.data_ptr(),
               cuda_stream(out.device()));
}
constexpr auto maximum_cuda = &extremum_cuda<true>;
constexpr auto minimum_cuda = &extremum_cuda<false>;

void eq_cuda(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const ScalarType common = promoteTypes(a.dtype(), b.dtype());  // compared in the promoted dtype
  Tensor ac = cast_cuda(a, common), bc = cast_cuda(b, common);
  kc::eq(common, cuda_loop(out, {&ac, &bc}), static_cast<bool*>(out.data_ptr()), ac.data_ptr(), bc.data_ptr(),
         cuda_stream(out.device()));
}

void where_cuda(const char*, const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor ac = cast_cuda(a, out.dtype()), bc = cast_cuda(b, out.dtype());
  kc::where(out.dtype(), cuda_loop(out, {&cond, &ac, &bc}), out.data_ptr(), static_cast<const bool*>(cond.data_ptr()),
            ac.data_ptr(), bc.data_ptr(), cuda_stream(out.device()));
}

void masked_fill_cuda(const char*, const Tensor& out, const Tensor& self, const Tensor& mask, double value) {
  kc::masked_fill(out.dtype(), cuda_loop(out, {&self, &mask}), out.data_ptr(), self.data_ptr(),
                  static_cast<const bool*>(mask.data_ptr()), value, cuda_stream(out.device()));
}

// ---------------------------------------------------------------------------------------------
// fused backward kernels: grad_input = grad * f'(x) (the meta function checked the dtype)
// ---------------------------------------------------------------------------------------------

void grad_map_cuda(kc::GradOp gop, const Tensor& out, const Tensor& grad, const Tensor& x, double threshold = 0.0) {
  Tensor gc = cast_cuda(grad, out.dtype()), xc = cast_cuda(x, out.dtype());
  kc::grad_map(gop, out.dtype(), cuda_loop(out, {&gc, &xc}), out.data_ptr(), gc.data_ptr(), xc.data_ptr(), threshold,
               cuda_stream(out.device()));
}

void threshold_backward_cuda(const char*, const Tensor& out, const Tensor& grad, const Tensor& self, double threshold) {
  grad_map_cuda(kc::GradOp::Threshold, out, grad, self, threshold);
}
void sigmoid_backward_cuda(const char*, const Tensor& out, const Tensor& grad, const Tensor& y) {
  grad_map_cuda(kc::GradOp::Sigmoid, out, grad, y);
}
void tanh_backward_cuda(const char*, const Tensor& out, const Tensor& grad, const Tensor& y) {
  grad_map_cuda(kc::GradOp::Tanh, out, grad, y);
}
void silu_backward_cuda(const char*, const Tensor& out, const Tensor& grad, const Tensor& self) {
  grad_map_cuda(kc::GradOp::Silu, out, grad, self);
}
void gelu_backward_cuda(const char*, const Tensor& out, const Tensor& grad, const Tensor& self,
                        const std::string& approximate) {
  grad_map_cuda(approximate == "tanh" ? kc::GradOp::GeluTanh : kc::GradOp::Gelu, out, grad, self);
}

// ---------------------------------------------------------------------------------------------
// the optimizers' updates, in place: out is self
// ---------------------------------------------------------------------------------------------

template <kc::AddcOp Op>
void addc_cuda(const char*, const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  Tensor a = cast_cuda(t1, self.dtype()), b = cast_cuda(t2, self.dtype());
  kc::addc(Op, self.dtype(), cuda_loop(out, {&self, &a, &b}), out.data_ptr(), self.data_ptr(), a.data_ptr(),
           b.data_ptr(), value, cuda_stream(out.device()));
}
constexpr auto addcmul_cuda = &addc_cuda<kc::AddcOp::Mul>;
constexpr auto addcdiv_cuda = &addc_cuda<kc::AddcOp::Div>;

void lerp_cuda(const char*, const Tensor& out, const Tensor& self, const Tensor& end, double weight) {
  Tensor e = cast_cuda(end, self.dtype());
  kc::lerp(self.dtype(), cuda_loop(out, {&self, &e}), out.data_ptr(), self.data_ptr(), e.data_ptr(), weight,
           cuda_stream(out.device()));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
#define REMAT_UNARY(NAME, NEEDS_FLOAT, CPU_OP, CUDA_OP, VARIANTS) \
  impl<structured_##NAME, CUDABackend, &unary_cuda<kc::UnaryOp::CUDA_OP>>(m);
#define REMAT_BINARY(NAME, META, CPU_OP, CUDA_OP, VARIANTS) \
  impl<structured_##NAME, CUDABackend, &binary_cuda<kc::BinaryOp::CUDA_OP>>(m);
#define REMAT_SCALAR(NAME, META, CPU_OP, CUDA_OP, VARIANTS) \
  impl<structured_##NAME##_Scalar, CUDABackend, &scalar_cuda<kc::ScalarOp::CUDA_OP>>(m);
#define REMAT_POINTWISE(NAME, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  impl<structured_##NAME, CUDABackend, CUDA_IMPL>(m);
#define REMAT_POINTWISE_INPLACE(NAME, OVERLOAD, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  impl<structured_##NAME##_, CUDABackend, CUDA_IMPL>(m);
#include "ops/pointwise.def"
}

}  // namespace remat::ops
