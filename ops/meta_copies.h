// A dry run's copies (no PyTorch counterpart: FakeTensorMode allocates nothing to count): the
// Meta twins of the backends' copy functions (CPUCopies in ops/cpu_utils.h, CUDACopies in
// ops/cuda/cuda_utils.h). A kernel whose temporaries are a template over these copies
// (cuda_temporaries::reduce_input, ...) is run by its backend with the backend's copies and by
// the Meta kernel with these: the same allocations, of the same sizes, in the same order, none
// of them filled.
#pragma once

#include <cstddef>

#include "engine/core/tensor.h"
#include "ops/cuda_temporaries.h"

namespace remat::ops {

struct MetaCopies {
  static Tensor empty(const Shape& sizes, ScalarType dtype) { return make_empty(sizes, dtype, Device{kMeta}); }
  // t converted to dtype (a new contiguous tensor), or t itself when it has that dtype
  static Tensor cast(const Tensor& t, ScalarType dtype) { return t.dtype() == dtype ? t : empty(t.sizes(), dtype); }
  // a contiguous copy of t, or t itself when it is contiguous
  static Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : empty(t.sizes(), t.dtype()); }
  // an uninitialized scratch buffer of at least nbytes (int64 words)
  static Tensor workspace(size_t nbytes, const Device&) {
    return empty({cuda_temporaries::workspace_words(nbytes)}, kLong);
  }
};

}  // namespace remat::ops
