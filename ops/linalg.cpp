// Mirrors ATen/native/LinearAlgebra.cpp (mm, bmm, addmm, matmul) and Linear.cpp (linear): the
// matrix products' meta functions and CPU kernels, their schemas and CPU/Meta registrations from
// their Defs (ops/linalg_defs.h, ops/structured.h), and the composites matmul and linear.
#include <algorithm>
#include <cstring>
#include <string>

#include "engine/dispatch/library.h"
#include "kernels/cpu/gemm.h"
#include "ops/composite.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/gemm_copies.h"
#include "ops/linalg_defs.h"
#include "ops/functions.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

// Meta functions and the GEMM operand layout, shared by every backend (declared in ops/meta.h).

GemmOperand gemm_operand(const Tensor& m, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols) {
  // The stride of a size-1 dim is never used (and may be anything, e.g. 0 after expand): give it
  // a value BLAS accepts, so that every contiguous tensor is a valid operand.
  if (cols == 1) col_stride = 1;
  if (rows == 1) row_stride = std::max<int64_t>(cols, 1);
  if (col_stride == 1 && row_stride >= std::max<int64_t>(cols, 1)) return {m, false, row_stride};
  if (row_stride == 1 && col_stride >= std::max<int64_t>(rows, 1)) return {m, true, col_stride};
  return {Tensor(), false, 0};  // needs a copy
}

// op: the op named in errors (addmm checks its two matrices as mm does).
TensorMeta mm_meta(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "self");
  check_defined(op, b, "mat2");
  check_dim(op, a, 2, "self");
  check_dim(op, b, 2, "mat2");
  Device d = common_device(op, {&a, &b});
  REMAT_CHECK(a.sizes()[1] == b.sizes()[0], op, ": mat1 and mat2 shapes cannot be multiplied (", a.sizes()[0],
              "x", a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
  check_same_dtype(op, a, b);
  check_floating(op, a, "self");
  return {{a.sizes()[0], b.sizes()[1]}, a.dtype(), d};
}

// bmm takes [batch..., n, m] @ [batch..., m, p] with the same batch dims (one in PyTorch; up to
// four here, so that matmul hands over strided 4-D attention operands without copying them).
TensorMeta bmm_meta(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "self");
  check_defined(op, b, "mat2");
  for (const Tensor* t : {&a, &b}) {
    REMAT_CHECK(t->dim() >= 3 && t->dim() <= 2 + kMaxBmmBatchDims, op, ": expected '", t == &a ? "self" : "mat2",
                "' to be a 3-D tensor (or up to ", 2 + kMaxBmmBatchDims, "-D: [batch..., rows, cols]), but got a ",
                t->dim(), "-D tensor of shape ", t->sizes());
  }
  Device d = common_device(op, {&a, &b});
  const int64_t nd = a.dim();
  const Shape batch_a(a.sizes().begin(), a.sizes().end() - 2), batch_b(b.sizes().begin(), b.sizes().end() - 2);
  if (nd == 3 && b.dim() == 3) {
    REMAT_CHECK(a.sizes()[0] == b.sizes()[0], op, ": batch1 and batch2 must have same number of batches, got ",
                a.sizes()[0], " and ", b.sizes()[0]);
  } else {
    REMAT_CHECK(batch_a == batch_b, op, ": self and mat2 must have the same batch dims, got ", batch_a, " and ",
                batch_b, " (shapes ", a.sizes(), " and ", b.sizes(), ")");
  }
  auto batch_str = [](const Shape& s) {  // "2, 3": the batch dims inside PyTorch's [batch, n]
    std::string r;
    for (int64_t v : s) r += std::to_string(v) + ", ";
    return r;
  };
  REMAT_CHECK(a.sizes()[nd - 1] == b.sizes()[nd - 2],
              op, ": Expected size for first two dimensions of batch2 tensor to be: [", batch_str(batch_a),
              a.sizes()[nd - 1], "] but got: [", batch_str(batch_b), b.sizes()[nd - 2], "].");
  check_same_dtype(op, a, b);
  check_floating(op, a, "self");
  Shape out = batch_a;
  out.push_back(a.sizes()[nd - 2]);
  out.push_back(b.sizes()[nd - 1]);
  return {out, a.dtype(), d};
}

TensorMeta addmm_meta(const char* op, const Tensor& bias, const Tensor& a, const Tensor& b) {
  TensorMeta m = mm_meta(op, a, b);
  check_defined(op, bias, "self");
  common_device(op, {&bias, &a});
  Shape s = broadcast_shapes(op, bias.sizes(), m.sizes);
  REMAT_CHECK(s == m.sizes, op, ": bias of shape ", bias.sizes(), " does not broadcast to the product's shape ",
              m.sizes);
  return m;
}

namespace {

namespace cpu = kernels::cpu;

// out[i] = a[i] @ b[i] (+ out[i] when accumulate, + bias on every row when bias is defined) for
// each batch entry (any number of batch dims, any strides); out is contiguous, bias (if defined) n contiguous values of out's dtype.
void batched_gemm(const Tensor& out, const Tensor& a_in, const Tensor& b_in, bool accumulate,
                  const Tensor& bias = Tensor()) {
  const int64_t m = out.sizes()[out.dim() - 2], n = out.sizes()[out.dim() - 1];
  const int64_t k = a_in.sizes()[a_in.dim() - 1];
  if (k == 0) {  // an empty sum: the product is zero (an empty operand may have any strides)
    if (bias.defined()) {
      copy_into_cpu(out, bias);
    } else if (!accumulate) {
      std::memset(out.data_ptr(), 0, static_cast<size_t>(out.nbytes()));
    }
    return;
  }
  // The copies (gemm_copies.h: the plan the Meta kernel makes them by too), then the layouts.
  const GemmOperands g =
      make_gemm_copies(cpu_gemm_copies(out, a_in, b_in), a_in, b_in, [](const Tensor& t) { return contiguous_cpu(t); });
  const Tensor &a = g.a, &b = g.b;
  auto stride = [](const Tensor& t, int64_t from_end) { return t.strides()[t.dim() - from_end]; };
  const GemmOperand ga = gemm_operand(a, stride(a, 2), stride(a, 1), m, k);
  const GemmOperand gb = gemm_operand(b, stride(b, 2), stride(b, 1), k, n);
  REMAT_INTERNAL_ASSERT(ga.t.defined() && gb.t.defined());
  cpu::StridedGemm p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch_dims = static_cast<int>(out.dim() - 2);
  REMAT_INTERNAL_ASSERT(p.batch_dims <= cpu::StridedGemm::kMaxBatchDims);
  // Batch strides, innermost first; a size-1 dim gets its dense stride (it is never stepped).
  int64_t dense_a = m * k, dense_b = k * n, dense_c = m * n;
  for (int d = p.batch_dims - 1; d >= 0; --d) {
    const size_t i = static_cast<size_t>(d);
    p.batch[i] = out.sizes()[i];
    p.a[i] = a.sizes()[i] == 1 ? dense_a : a.strides()[i];
    p.b[i] = b.sizes()[i] == 1 ? dense_b : b.strides()[i];
    p.c[i] = dense_c;
    dense_a *= a.sizes()[i];
    dense_b *= b.sizes()[i];
    dense_c *= out.sizes()[i];
  }
  const size_t rd = static_cast<size_t>(p.batch_dims);
  // gemm_operand's (transposed, leading dim) back to row and column strides.
  p.a[rd] = ga.trans ? 1 : ga.ld;
  p.a[rd + 1] = ga.trans ? ga.ld : 1;
  p.b[rd] = gb.trans ? 1 : gb.ld;
  p.b[rd + 1] = gb.trans ? gb.ld : 1;
  p.c[rd] = n;
  p.c[rd + 1] = 1;
  REMAT_DISPATCH_FLOATING_TYPES(out.dtype(), "aten::mm", [&] {
    cpu::gemm_batched<scalar_t>(p, scalar_t(1.0f), a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(),
                                scalar_t(accumulate ? 1.0f : 0.0f), out.data_ptr<scalar_t>(),
                                bias.defined() ? bias.data_ptr<scalar_t>() : nullptr);
  });
}

// The kernels (TORCH_IMPL_FUNC): out has the meta function's geometry and is not empty.
void mm_cpu(const char*, const Tensor& out, const Tensor& a, const Tensor& b) { batched_gemm(out, a, b, false); }

// A bias the GEMM can add itself: one row of n contiguous values of the product's dtype ([n] or
// [1, n]), as nn.Linear's. Any other broadcast is copied into the output first.
bool is_row_bias(const Tensor& bias, const Tensor& out) {
  const int64_t n = out.sizes()[1];
  if (bias.dtype() != out.dtype() || !bias.device().is_cpu() || bias.numel() != n) return false;
  if (bias.dim() == 1) return bias.strides()[0] == 1 || n == 1;
  return bias.dim() == 2 && bias.sizes()[0] == 1 && (bias.strides()[1] == 1 || n == 1);
}

void addmm_cpu(const char*, const Tensor& out, const Tensor& bias, const Tensor& a, const Tensor& b) {
  if (is_row_bias(bias, out)) {
    batched_gemm(out, a, b, false, bias);
  } else {
    copy_into_cpu(out, bias);
    batched_gemm(out, a, b, true);
  }
}

// matmul: PyTorch's rules for 1-D, 2-D and batched operands (broadcasting batch dims), issuing
// the ops PyTorch's matmul issues (LinearAlgebra.cpp's _matmul_impl), so that a dispatch mode, a
// SAC policy or a plan file sees the same calls on both sides: a batched operand folded into rows
// is reshape, mm, _unsafe_view; batched operands are expand and reshape each (a view, or clone and
// _unsafe_view for a layout no view expresses: attention's q, k^T and v), bmm, _unsafe_view.
// (1-D @ 1-D, 2-D @ 1-D and 1-D @ 2-D run mul and sum or mm here, where PyTorch runs dot, mv and
// mm; a 1-D or 2-D left operand times a batch runs the batched path, where PyTorch folds it too.)
Tensor matmul_composite(const Tensor& a, const Tensor& b) {
  check_defined("aten::matmul", a, "self");
  check_defined("aten::matmul", b, "other");
  const int64_t da = a.dim(), db = b.dim();
  REMAT_CHECK(da > 0 && db > 0, "aten::matmul: both arguments to matmul need to be at least 1D, but they are ", da,
              "D and ", db, "D");
  if (da == 1 && db == 1) {
    REMAT_CHECK(a.sizes()[0] == b.sizes()[0], "aten::matmul: inconsistent tensor size, expected tensor [",
                a.sizes()[0], "] and src [", b.sizes()[0], "] to have the same number of elements");
    return sum(mul(a, b));
  }
  if (da == 2 && db == 1) return squeeze(mm(a, unsqueeze(b, 1)), 1);
  if (da == 1 && db == 2) return squeeze(mm(unsqueeze(a, 0), b), 0);
  if (da == 2 && db == 2) return mm(a, b);
  // should_fold: a batch folds into rows when that copies nothing (its batch dims are one
  // stride-compatible run), or when a requires grad (a copy here saves a larger one in backward).
  auto foldable = [&] {
    if (a.requires_grad() || a.numel() == 0) return true;
    for (int64_t i = 0; i + 2 < da; ++i)
      if (a.strides()[i] != a.strides()[i + 1] * a.sizes()[i + 1]) return false;
    return true;
  };
  if (da >= 3 && db <= 2 && foldable()) {
    // Fold the batch into rows: [..., m, k] @ [k, n] is one [batch*m, k] @ [k, n].
    Tensor rhs = db == 1 ? unsqueeze(b, 1) : b;
    Shape out_shape(a.sizes().begin(), a.sizes().end() - 1);
    int64_t k = a.sizes()[da - 1];
    // The folded row count spelled out: a -1 is ambiguous when k is 0.
    Tensor r = mm(reshape(a, {shape_numel(out_shape), k}), rhs);
    if (db == 2) out_shape.push_back(rhs.sizes()[1]);
    return _unsafe_view(r, out_shape);
  }
  // Batched: broadcast the batch dims (expand), fold them into one (reshape), then bmm.
  const int64_t m = da > 1 ? a.sizes()[da - 2] : 1, k = a.sizes()[da - 1];
  const int64_t k2 = db > 1 ? b.sizes()[db - 2] : b.sizes()[0], n = db > 1 ? b.sizes()[db - 1] : 1;
  const Shape batch_a(a.sizes().begin(), a.sizes().end() - std::min<int64_t>(da, 2));
  const Shape batch_b(b.sizes().begin(), b.sizes().end() - std::min<int64_t>(db, 2));
  const Shape batch = broadcast_shapes("aten::matmul", batch_a, batch_b);
  REMAT_CHECK(k == k2, "aten::matmul: mat1 and mat2 shapes cannot be multiplied (", m, "x", k, " and ", k2, "x", n, ")");
  const int64_t nb = shape_numel(batch);
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {m, k});
  eb.push_back(k);
  if (db > 1) eb.push_back(n);
  const Tensor lhs = reshape(expand(a, ea), {nb, m, k});
  const Tensor rhs = db > 1 ? reshape(expand(b, eb), {nb, k, n}) : unsqueeze(reshape(expand(b, eb), {nb, k}), 2);
  Shape out_shape = batch;
  if (da > 1) out_shape.push_back(m);
  if (db > 1) out_shape.push_back(n);
  return _unsafe_view(bmm(lhs, rhs), out_shape);
}

// linear: x @ w^T + b, as PyTorch's linear (Linear.cpp) issues it: a 2-D input with a bias is
// t and addmm; a contiguous input with a bias is folded to 2-D so that the bias rides in addmm
// (_flatten_nd_linear: reshape, t, addmm, _unsafe_view); anything else is matmul(x, w.t()) and,
// with a bias, add.
Tensor linear_composite(const Tensor& x, const Tensor& w, const Tensor& bias) {
  check_defined("aten::linear", x, "input");
  check_dim("aten::linear", w, 2, "weight");
  if (x.dim() == 2 && bias.defined()) return addmm(bias, x, t(w));
  if (bias.defined() && x.is_contiguous() && bias.dim() == 1) {
    Shape out_shape(x.sizes().begin(), x.sizes().end() - 1);
    const int64_t rows = shape_numel(out_shape);  // spelled out: a -1 is ambiguous for 0 input features
    Tensor x2 = reshape(x, {rows, x.sizes()[x.dim() - 1]});
    Tensor r = addmm(bias, x2, t(w));
    out_shape.push_back(r.sizes()[1]);
    return _unsafe_view(r, out_shape);
  }
  Tensor r = matmul(x, t(w));
  return bias.defined() ? add(r, bias) : r;
}

}  // namespace

// The schemas and the Meta kernels (with the GEMM's copies), from the Defs (ops/linalg_defs.h).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_linalg_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  structured::impl_meta<structured_mm, &meta_gemm_copies>(m);
  structured::impl_meta<structured_bmm, &meta_gemm_copies>(m);
  structured::impl_meta<structured_addmm, &addmm_meta_copies>(m);
}

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
  impl<structured_mm, CPUBackend, &mm_cpu>(m);
  impl<structured_bmm, CPUBackend, &mm_cpu>(m);
  impl<structured_addmm, CPUBackend, &addmm_cpu>(m);
}
REMAT_LIBRARY_FRAGMENT(aten, m) {
  impl_composite(m, "matmul", REMAT_FN(matmul_composite));
  impl_composite(m, "linear", REMAT_FN(linear_composite));
}

}  // namespace remat::ops
