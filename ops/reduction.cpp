// Mirrors ATen/native/ReduceOps.cpp (sum, mean, amax) and ExpandUtils (sum_to_size): the
// reductions' meta functions and CPU kernels, their schemas and CPU/Meta registrations from their
// Defs (ops/reduction_defs.h, ops/structured.h), and the composite sum_to_size.
#include <algorithm>
#include <limits>

#include "engine/dispatch/library.h"
#include "kernels/cpu/reduce.h"
#include "ops/composite.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/functions.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
#include "ops/op_utils.h"
#include "ops/reduction_defs.h"
#include "ops/structured.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

// Which dims are reduced (all when dims is None or empty, as PyTorch's sum(dim=[]) does).
std::vector<bool> reduced_mask(const char* op, const Tensor& self, const std::optional<Shape>& dims) {
  std::vector<bool> mask(static_cast<size_t>(self.dim()), !dims.has_value() || dims->empty());
  if (dims && !dims->empty()) {
    for (int64_t d : *dims) {
      int64_t w = maybe_wrap_dim(d, self.dim(), op);
      if (self.dim() == 0) continue;  // dim 0 (or -1) of a 0-d tensor: nothing to reduce
      REMAT_CHECK(!mask[w], op, ": dim ", w, " appears multiple times in the list of dims");
      mask[w] = true;
    }
  }
  return mask;
}

Shape reduced_shape(const Tensor& self, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d]) out.push_back(self.sizes()[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

TensorMeta reduce_meta(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim,
                       bool floating_only) {
  check_defined(op, self, "self");
  if (floating_only) check_floating(op, self, "self");
  auto mask = reduced_mask(op, self, dims);
  ScalarType dtype = self.dtype() == kBool ? kLong : self.dtype();
  return {reduced_shape(self, mask, keepdim), dtype, self.device()};
}

void check_amax_nonempty(const Tensor& self, int64_t dim) {
  REMAT_CHECK(self.numel() > 0, "aten::amax: Expected reduction dim ", dim, " to have non-zero size (input ",
              self.sizes(), ")");
}

TensorMeta sum_meta(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_meta(op, self, dims, keepdim, false);
}
TensorMeta mean_meta(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_meta(op, self, dims, keepdim, true);
}
TensorMeta amax_meta(const char* op, const Tensor& self, int64_t dim, bool keepdim) {
  check_defined(op, self, "self");
  check_amax_nonempty(self, dim);
  return reduce_meta(op, self, Shape{dim}, keepdim, false);
}

namespace {

namespace cpu = kernels::cpu;

// The CPU reduction's temporaries: self converted to the result's dtype (Bool sums as Long).
// Copies: CPUCopies in the kernel, MetaCopies in a dry run's Meta kernel.
template <class Copies>
Tensor cpu_reduce_input(const Tensor& self, const Tensor& out) {
  return Copies::cast(self, out.dtype());
}

// The kernel (TORCH_IMPL_FUNC): out has the meta function's geometry and is not empty.
template <class R, bool kMean>
void reduce_cpu(const char* op, const Tensor& out, const Tensor& self, const std::vector<bool>& mask) {
  Tensor in = cpu_reduce_input<CPUCopies>(self, out);
  // Output strides over the kept dims (keepdim adds size-1 dims, which have no effect).
  Shape out_strides = contiguous_strides(reduced_shape(self, mask, false));
  cpu::ReduceShape s;
  int64_t red_n = 1;
  size_t k = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask[d]) {
      if (self.sizes()[d] == 1) continue;
      s.red_sizes.push_back(self.sizes()[d]);
      s.red_strides.push_back(in.strides()[d]);
      red_n *= self.sizes()[d];
    } else {
      if (self.sizes()[d] != 1) {
        s.kept_sizes.push_back(self.sizes()[d]);
        s.kept_in_strides.push_back(in.strides()[d]);
        s.kept_out_strides.push_back(out_strides[k]);
      }
      ++k;
    }
  }
  if (self.numel() == 0) {
    // The sum of no elements is 0; their mean is 0/0 = NaN. A raw fill: no op call.
    double empty_value = kMean ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
      std::fill_n(out.data_ptr<scalar_t>(), out.numel(), static_cast<scalar_t>(empty_value));
    });
    return;
  }
  double scale = kMean ? 1.0 / static_cast<double>(red_n) : 1.0;
  REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    cpu::reduce_kernel<R, scalar_t>(s, out.data_ptr<scalar_t>(), in.data_ptr<scalar_t>(), scale);
  });
}

using OptionalDims = const std::optional<Shape>&;

// The Defs' kernels: dims as sum's (None, a list) or as amax's (one dim).
template <class R, bool kMean, class Dims>
void reduce_impl(const char* op, const Tensor& out, const Tensor& self, Dims dims, bool) {
  reduce_cpu<R, kMean>(op, out, self, reduced_mask(op, self, reduced_dims(dims)));
}

// The Meta kernels' temporaries (structured::impl_meta): those of the backend the dry run counts
// like, from the templates its kernel runs.
template <class Def, class Dims>
void reduce_meta_copies(const Tensor& out, const Tensor& self, Dims dims, bool) {
  if (!cuda_temporaries::imitating()) {
    Tensor in = cpu_reduce_input<MetaCopies>(self, out);
    return;
  }
  const std::vector<bool> mask = reduced_mask(Def::name, self, reduced_dims(dims));
  const cuda_temporaries::ReduceInput r = cuda_temporaries::reduce_input<MetaCopies>(self, mask, out.dtype(), out);
}

// Sums a broadcast result back to size (the gradient of expand).
Tensor sum_to_size_composite(const Tensor& self, const Shape& size) {
  REMAT_CHECK(static_cast<int64_t>(size.size()) <= self.dim(), "aten::sum_to_size: size ", size,
              " is not expandable to the tensor's size ", self.sizes());
  size_t lead = static_cast<size_t>(self.dim()) - size.size();
  Shape dims;
  for (size_t d = 0; d < static_cast<size_t>(self.dim()); ++d) {
    if (d < lead) {
      dims.push_back(static_cast<int64_t>(d));
      continue;
    }
    int64_t want = size[d - lead], have = self.sizes()[d];
    REMAT_CHECK(want == have || want == 1, "aten::sum_to_size: size ", size,
                " is not expandable to the tensor's size ", self.sizes());
    if (want == 1 && have != 1) dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return self;
  Tensor r = sum(self, dims, /*keepdim=*/true);
  return lead > 0 ? view(r, size) : r;
}

}  // namespace

// The schemas and the Meta kernels (with the backends' temporaries), from the Defs
// (ops/reduction_defs.h).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_reduction_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  structured::impl_meta<structured_sum, &reduce_meta_copies<structured_sum, OptionalDims>>(m);
  structured::impl_meta<structured_mean, &reduce_meta_copies<structured_mean, OptionalDims>>(m);
  structured::impl_meta<structured_amax, &reduce_meta_copies<structured_amax, int64_t>>(m);
}

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
  impl<structured_sum, CPUBackend, &reduce_impl<cpu::SumReducer, false, OptionalDims>>(m);
  impl<structured_mean, CPUBackend, &reduce_impl<cpu::SumReducer, true, OptionalDims>>(m);
  impl<structured_amax, CPUBackend, &reduce_impl<cpu::MaxReducer, false, int64_t>>(m);
}
REMAT_LIBRARY_FRAGMENT(aten, m) { impl_composite(m, "sum_to_size", REMAT_FN(sum_to_size_composite)); }

}  // namespace remat::ops
