// The view calls whose allocations the drift tests of ops/view_defs.h compare between a backend
// and a Meta dry run (tests/ops/view_defs_test.cpp, tests/ops/cuda/view_defs_test.cpp), and the
// calls whose errors they compare.
#pragma once

#include <functional>
#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& view_cases() {
  static const std::vector<AllocationCase> cases = {
      {"view", [](Device d) { return view(on(d, {6, 4}), {3, -1}); }},
      // no view has the geometry: a copy
      {"reshape of a transposed tensor", [](Device d) { return reshape(transpose(on(d, {6, 4}), 0, 1), {24}); }},
      {"reshape of a contiguous tensor", [](Device d) { return reshape(on(d, {6, 4}), {24}); }},
      {"permute, slice, select, narrow",
       [](Device d) { return narrow(select(slice(permute(on(d, {2, 3, 4}), {2, 0, 1}), 0, 1, 4, 2), 1, 1), 1, 0, 2); }},
      {"unsqueeze, squeeze, expand", [](Device d) { return expand(squeeze(unsqueeze(on(d, {3}), 0), 0), {2, 3}); }},
      {"as_strided, view_as, detach",
       [](Device d) { return detach(view_as(as_strided(on(d, {6}), {2, 3}, {3, 1}, 0), on(d, {2, 3}))); }},
      {"unbind, split, chunk, split_with_sizes",
       [](Device d) {
         const Tensor t = on(d, {4, 6});
         return unbind(t, 0)[1] + split(t, 3, 1)[0].sum() + chunk(t, 2, 0)[1].sum() + split_with_sizes(t, {2, 4}, 1)[1].sum();
       }},
  };
  return cases;
}

// Calls that raise (the view kernels' checks).
struct ViewErrorCase {
  const char* what;
  const char* op;
  std::function<void(Device)> run;
};
inline const std::vector<ViewErrorCase>& view_error_cases() {
  static const std::vector<ViewErrorCase> cases = {
      {"view across strides", "aten::view", [](Device d) { view(transpose(on(d, {6, 4}), 0, 1), {24}); }},
      {"reshape to another numel", "aten::reshape", [](Device d) { reshape(on(d, {6, 4}), {5, 5}); }},
      {"permute with a repeated dim", "aten::permute", [](Device d) { permute(on(d, {2, 3}), {0, 0}); }},
      {"slice with step 0", "aten::slice", [](Device d) { slice(on(d, {4}), 0, 0, 4, 0); }},
      {"expand of a non-singleton dim", "aten::expand", [](Device d) { expand(on(d, {2, 3}), {4, 3}); }},
      {"as_strided out of the storage", "aten::as_strided", [](Device d) { as_strided(on(d, {6}), {3, 3}, {3, 1}, 0); }},
      {"select out of range", "aten::select", [](Device d) { select(on(d, {2, 3}), 1, 3); }},
      {"narrow past the end", "aten::narrow", [](Device d) { narrow(on(d, {2, 3}), 1, 2, 2); }},
      {"split_with_sizes not summing to the size", "aten::split_with_sizes",
       [](Device d) { split_with_sizes(on(d, {4, 6}), {2, 3}, 1); }},
      {"chunk into 0", "aten::chunk", [](Device d) { chunk(on(d, {4}), 0, 0); }},
      {"unbind of a 0-d tensor", "aten::unbind", [](Device d) { unbind(on(d, {}), 0); }},
  };
  return cases;
}

}  // namespace remat::testing
