// Mirrors ATen/native/ReduceOps.cpp (sum, mean, amax) and ExpandUtils (sum_to_size).
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
#include "ops/op_utils.h"

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

namespace {

namespace cpu = kernels::cpu;

template <class R>
Tensor reduce_cpu(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim, bool mean) {
  TensorMeta m = reduce_meta(op, self, dims, keepdim, mean);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  auto mask = reduced_mask(op, self, dims);
  Tensor in = cast_cpu(self, m.dtype);
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
    double empty_value = mean ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    REMAT_DISPATCH_NUMERIC_TYPES(m.dtype, op, [&] {
      std::fill_n(out.data_ptr<scalar_t>(), out.numel(), static_cast<scalar_t>(empty_value));
    });
    return out;
  }
  double scale = mean ? 1.0 / static_cast<double>(red_n) : 1.0;
  REMAT_DISPATCH_NUMERIC_TYPES(m.dtype, op, [&] {
    cpu::reduce_kernel<R, scalar_t>(s, out.data_ptr<scalar_t>(), in.data_ptr<scalar_t>(), scale);
  });
  return out;
}

Tensor sum_cpu(const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_cpu<cpu::SumReducer>("aten::sum", self, dims, keepdim, false);
}
Tensor mean_cpu(const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_cpu<cpu::SumReducer>("aten::mean", self, dims, keepdim, true);
}
Tensor amax_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  check_amax_nonempty(self, dim);
  return reduce_cpu<cpu::MaxReducer>("aten::amax", self, Shape{dim}, keepdim, false);
}
// Imitating CUDA, a reduction also makes the CUDA reduction's copy and workspace (cuda_temporaries.h).
Tensor reduce_meta_kernel(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim,
                          bool floating_only) {
  TensorMeta m = reduce_meta(op, self, dims, keepdim, floating_only);
  m.device = Device{kMeta};
  Tensor out = empty_from(m);
  if (cuda_temporaries::imitating()) cuda_temporaries::reduce(self, reduced_mask(op, self, dims), m.dtype, out);
  return out;
}
Tensor sum_meta(const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_meta_kernel("aten::sum", self, dims, keepdim, false);
}
Tensor mean_meta(const Tensor& self, const std::optional<Shape>& dims, bool keepdim) {
  return reduce_meta_kernel("aten::mean", self, dims, keepdim, true);
}
Tensor amax_meta(const Tensor& self, int64_t dim, bool keepdim) {
  return reduce_meta_kernel("aten::amax", self, Shape{dim}, keepdim, false);
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

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("sum", REMAT_FN(sum_cpu));
  m.impl("mean", REMAT_FN(mean_cpu));
  m.impl("amax", REMAT_FN(amax_cpu));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("sum", REMAT_FN(sum_meta));
  m.impl("mean", REMAT_FN(mean_meta));
  m.impl("amax", REMAT_FN(amax_meta));
}
REMAT_LIBRARY_FRAGMENT(aten, m) { impl_composite(m, "sum_to_size", REMAT_FN(sum_to_size_composite)); }

}  // namespace remat::ops
