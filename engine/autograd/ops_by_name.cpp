// Boxed calls of the ops the engine needs (see ops_by_name.h).
#include "engine/autograd/ops_by_name.h"

#include "engine/dispatch/dispatcher.h"

namespace remat::autograd::ops_by_name {

namespace {
Tensor call1(const OperatorHandle& op, std::vector<IValue> args) { return op.call(args).at(0).toTensor(); }
// Looked up on first use: the op table is filled by static registration in ops/.
#define REMAT_OP(name) \
  static const OperatorHandle op = find_op(name)
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { REMAT_OP("aten::add"); return call1(op, {a, b}); }
void add_(const Tensor& self, const Tensor& other) { REMAT_OP("aten::add_"); op.call({self, other}); }
Tensor ones_like(const Tensor& t) { REMAT_OP("aten::ones_like"); return call1(op, {t}); }
Tensor zeros_like(const Tensor& t) { REMAT_OP("aten::zeros_like"); return call1(op, {t}); }
Tensor clone(const Tensor& t) { REMAT_OP("aten::clone"); return call1(op, {t}); }
Tensor sum_to_size(const Tensor& t, const Shape& shape) {
  REMAT_OP("aten::sum_to_size");
  return call1(op, {t, shape});
}
void copy_(const Tensor& self, const Tensor& src) { REMAT_OP("aten::copy_"); op.call({self, src}); }
Tensor as_strided(const Tensor& t, const Shape& size, const Shape& stride, int64_t storage_offset) {
  REMAT_OP("aten::as_strided");
  return call1(op, {t, size, stride, storage_offset});
}
Tensor to_dtype(const Tensor& t, ScalarType dtype) {
  REMAT_OP("aten::_to_copy");
  return call1(op, {t, IValue(dtype), IValue()});
}

}  // namespace remat::autograd::ops_by_name
