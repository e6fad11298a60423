// Mirrors ATen/ExpandUtils.cpp (infer_size) and TensorIterator's operand setup.
#include "ops/op_utils.h"

namespace remat::ops {

Tensor empty_from(TensorMeta meta) { return make_empty(std::move(meta.sizes), meta.dtype, meta.device); }

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = n; i-- > 0;) {  // from the last dim, so the error names the rightmost mismatch (as PyTorch)
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    REMAT_CHECK(da == db || da == 1 || db == 1, op, ": The size of tensor a (", da,
                ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
                " (shapes ", a, " and ", b, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Device common_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (first == nullptr) {
      first = t;
      continue;
    }
    REMAT_CHECK(t->device() == first->device(), op,
                ": Expected all tensors to be on the same device, but found at least two devices, ",
                first->device(), " and ", t->device(), "!");
  }
  return first ? first->device() : Device{kCPU};
}

void check_defined(const char* op, const Tensor& t, const char* name) {
  REMAT_CHECK(t.defined(), op, ": argument '", name, "' is an undefined tensor");
}

void check_dim(const char* op, const Tensor& t, int64_t dim, const char* name) {
  REMAT_CHECK(t.dim() == dim, op, ": expected '", name, "' to be a ", dim, "-D tensor, but got a ",
              t.dim(), "-D tensor of shape ", t.sizes());
}

void check_floating(const char* op, const Tensor& t, const char* name) {
  REMAT_CHECK(isFloatingType(t.dtype()), op, ": expected '", name,
              "' to have a floating point dtype, but got ", toString(t.dtype()));
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  REMAT_CHECK(a.dtype() == b.dtype(), op, ": expected both arguments to have the same dtype, but got ",
              toString(a.dtype()), " and ", toString(b.dtype()));
}

void check_no_internal_overlap(const char* op, const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    REMAT_CHECK(self.sizes()[d] <= 1 || self.strides()[d] != 0, op,
                ": unsupported operation: more than one element of the written-to tensor refers to a single "
                "memory location. Please clone() the tensor before performing the operation. (shape ",
                self.sizes(), ", strides ", self.strides(), ")");
  }
}

Shape broadcast_strides(const Tensor& t, const Shape& sizes) {
  Shape strides(sizes.size(), 0);
  size_t offset = sizes.size() - static_cast<size_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) strides[offset + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d];
  return strides;
}

kernels::cpu::LoopShape make_loop(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  kernels::cpu::LoopShape s;
  REMAT_CHECK(out.dim() <= kernels::cpu::kMaxDims, "tensors of more than ", kernels::cpu::kMaxDims,
              " dims are not supported (got ", out.dim(), ")");
  s.ndim = static_cast<int>(out.dim());
  s.noperands = 1 + static_cast<int>(inputs.size());
  for (int d = 0; d < s.ndim; ++d) {
    s.sizes[d] = out.sizes()[d];
    s.strides[0][d] = out.strides()[d];
  }
  int i = 1;
  for (const Tensor* t : inputs) {
    // right-aligned broadcast: stride 0 where t has no such dim or size 1
    int64_t offset = out.dim() - t->dim();
    for (int d = 0; d < s.ndim; ++d) {
      int64_t td = d - offset;
      s.strides[i][d] = (td < 0 || t->sizes()[td] == 1) ? 0 : t->strides()[td];
    }
    ++i;
  }
  s.coalesce();
  return s;
}

int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

}  // namespace remat::ops

namespace remat::ops {

Tensor complex_as_real(const Tensor& t, const Shape& sizes) {
  Shape strides = t.sizes() == sizes ? t.strides() : broadcast_strides(t, sizes), real_sizes = sizes;
  for (int64_t& s : strides) s *= 2;
  real_sizes.push_back(2);
  strides.push_back(1);
  return make_alias(t, toRealValueType(t.dtype()), real_sizes, strides, t.storage_offset() * 2);
}

}  // namespace remat::ops

namespace remat::ops::structured {

void throw_complex_not_implemented(const char* op, ScalarType dtype) {
  throw Error(detail::str(op, ": not implemented for '", toString(dtype),
                          "' (remat computes on complex tensors in view_as_complex, view_as_real, mul, "
                          "conj_physical and the copies alone)"));
}

}  // namespace remat::ops::structured
