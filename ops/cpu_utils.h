// Helpers for backend kernels that must not go back through the dispatcher (a kernel's own
// conversions and copies are not op calls: dispatch modes and autograd must not see them).
#pragma once

#include "engine/core/tensor.h"
#include "ops/op_utils.h"

namespace remat::ops {

// A tensor with t's values converted to dtype (t itself if already that dtype). CPU/Meta only.
Tensor cast_cpu(const Tensor& t, ScalarType dtype);
// t, or a contiguous copy of it. CPU/Meta only.
Tensor contiguous_cpu(const Tensor& t);
// out[...] = in[...] elementwise with broadcasting of in to out's shape and dtype conversion.
void copy_into_cpu(const Tensor& out, const Tensor& in);

// The CPU's copies, for kernels whose temporaries are a template over a backend's copies (the
// Meta kernel runs the same template with MetaCopies, ops/meta_copies.h).
struct CPUCopies {
  static Tensor cast(const Tensor& t, ScalarType dtype) { return cast_cpu(t, dtype); }
  static Tensor contiguous(const Tensor& t) { return contiguous_cpu(t); }
};

}  // namespace remat::ops
