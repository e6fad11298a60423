// The fused optimizers' calls the drift tests of ops/fused_optimizer_defs.h compare a backend and
// a Meta dry run on (no PyTorch counterpart): a contiguous gradient (nothing copied) and a
// strided one (the kernels' contiguous copy), for _fused_adamw_ and _fused_sgd_.
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

// _fused_adamw_ of a [4, 6] parameter; a transposed gradient when strided.
template <bool kStrided>
Tensor fused_adamw_case(Device d) {
  Tensor p = on(d, {4, 6}), m = on(d, {4, 6}), v = on(d, {4, 6});
  Tensor g = kStrided ? on(d, {6, 4}).t() : on(d, {4, 6});
  return _fused_adamw_(p, m, v, g, 1e-3, 0.9, 0.999, 0.01, 1e-8, 1, false);
}
// _fused_sgd_ of a [4, 6] parameter with momentum; a transposed gradient when strided.
template <bool kStrided>
Tensor fused_sgd_case(Device d) {
  Tensor p = on(d, {4, 6}), buf = on(d, {4, 6});
  Tensor g = kStrided ? on(d, {6, 4}).t() : on(d, {4, 6});
  return _fused_sgd_(p, g, buf, 0.0, 0.9, 0.1, 0.0, false, false, false);
}

inline std::vector<AllocationCase> fused_optimizer_cases() {
  return {
      {"_fused_adamw_, a contiguous gradient", &fused_adamw_case<false>},
      {"_fused_adamw_, a strided gradient (copied)", &fused_adamw_case<true>},
      {"_fused_sgd_, a contiguous gradient", &fused_sgd_case<false>},
      {"_fused_sgd_, a strided gradient (copied)", &fused_sgd_case<true>},
  };
}

}  // namespace remat::testing
