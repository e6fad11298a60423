// The copy family's kernels that are the same on every backend, and its one registration (no
// PyTorch counterpart as one file: ATen writes Copy.cpp's, Fill.cpp's, TensorShape.cpp's and
// TensorFactories' kernels once per backend). ops/copy.cpp (CPU) and ops/cuda/copy.cpp (CUDA) each
// give a DeviceOps:
//   using Backend = structured::CPUBackend (or CUDABackend);      // allocates, guards (structured.h)
//   static void fill(const Tensor& out, double value);            // every element = value
//   static void copy_into(const Tensor& out, const Tensor& src);  // strided, broadcast, any dtype
//   static bool copy_across(const Tensor& self, const Tensor& src);  // copy_ from another device
//                                                                 // (false: not one it copies from)
//   static void move_out(const Tensor& converted, const Tensor& out);  // _to_copy's bytes to out's device
//   static bool cat_contiguous(const Tensor& out, const std::vector<Tensor>& tensors, int64_t dim);
//                                                                  // cat by its own loop, or false
//   static constexpr auto triu = &...;                            // its triu kernel, impl(op, out, args...)
// impl_copy_kernels registers every Def of ops/copy_defs.h with them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/dispatch/library.h"
#include "ops/copy_defs.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

// The Defs' kernels (TORCH_IMPL_FUNC) that only fill and copy: out has the meta function's
// geometry (out is self for the in-place ops) and is not empty.
template <class DeviceOps>
struct CopyKernels {
  template <int kValue>
  static void fill_value(const char*, const Tensor& out, const Tensor&) { DeviceOps::fill(out, kValue); }
  static void fill(const char*, const Tensor& out, const Tensor&, double value) { DeviceOps::fill(out, value); }
  static void clone(const char*, const Tensor& out, const Tensor& self) { DeviceOps::copy_into(out, self); }

  // Within the device, or from another one (DeviceOps::copy_across); from Meta, nothing.
  static void copy(const char*, const Tensor& self, const Tensor&, const Tensor& src) {
    if (src.device() == self.device()) {
      DeviceOps::copy_into(self, src);
    } else if (!DeviceOps::copy_across(self, src)) {
      REMAT_CHECK(src.is_meta(), "aten::copy_: cannot copy from ", src.device(), " to ", self.device());
    }
  }

  // Converted on self's device (to_copy_staging, under its guard), then moved to out's.
  static void to_copy(const char*, const Tensor& out, const Tensor& self, std::optional<ScalarType>,
                      std::optional<Device>) {
    if (out.is_meta()) return;
    DeviceOps::Backend::run(self, [&] {
      const Tensor converted = to_copy_staging(out, self);
      DeviceOps::copy_into(converted, self);
      if (!converted.is_same(out)) DeviceOps::move_out(converted, out);
    });
  }

  // Each tensor into its slice of out along dim (the backend's own loop first, when it has one for
  // the layout: DeviceOps::cat_contiguous).
  static void cat(const char* op, const Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
    dim = maybe_wrap_dim(dim, tensors[0].dim(), op);
    if (DeviceOps::cat_contiguous(out, tensors, dim)) return;
    int64_t offset = 0;
    for (const Tensor& t : tensors) {
      Shape sizes = out.sizes();
      sizes[dim] = t.sizes()[dim];
      Tensor part = make_alias(out, sizes, out.strides(), offset * out.strides()[dim]);
      DeviceOps::copy_into(part, t);
      offset += t.sizes()[dim];
    }
  }

  // Zeros, the gradient written into its part (slice_backward_part, ops/meta.h).
  static void slice_backward(const char* op, const Tensor& out, const Tensor& grad, const Shape& input_sizes,
                             int64_t dim, int64_t start, int64_t, int64_t step) {
    DeviceOps::fill(out, 0.0);
    DeviceOps::copy_into(slice_backward_part(op, out, grad, input_sizes, dim, start, step), grad);
  }
};

// Every copy Def's kernel for one backend; `CrossDevice` allocates and guards for copy_ and
// _to_copy, whose tensors may be on several devices.
template <class DeviceOps, class CrossDevice = typename DeviceOps::Backend>
void impl_copy_kernels(Library& m) {
  using K = CopyKernels<DeviceOps>;
  using Backend = typename DeviceOps::Backend;
  using structured::impl;
  impl<structured_zero_, Backend, &K::template fill_value<0>>(m);
  impl<structured_fill_, Backend, &K::fill>(m);
  impl<structured_copy_, CrossDevice, &K::copy>(m);
  impl<structured_clone, Backend, &K::clone>(m);
  impl<structured__to_copy, CrossDevice, &K::to_copy>(m);
  impl<structured_cat, Backend, &K::cat>(m);
  impl<structured_triu, Backend, DeviceOps::triu>(m);
  impl<structured_zeros_like, Backend, &K::template fill_value<0>>(m);
  impl<structured_ones_like, Backend, &K::template fill_value<1>>(m);
  impl<structured_slice_backward, Backend, &K::slice_backward>(m);
}

}  // namespace remat::ops
