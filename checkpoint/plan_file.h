// A checkpoint plan as a file (no PyTorch counterpart: PyTorch's SAC policies are code, and its
// memory budget is a fraction inside torch.compile): the format's name and version, its dtype names,
// and the fingerprint of a region's op sequence, documented in docs/plan_format.md so that another
// language computes the same (python/remat_plan does). CheckpointPlan::to_json / from_json / save /
// load (checkpoint/planner.h) write and read the files.
//
//   plan_fingerprint("aten::mm(f32[1024x768]);aten::gelu(f32[8x128x3072]);")
//     // "fnv1a64:" + 16 lowercase hex digits
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/scalar_type.h"

namespace remat {

constexpr const char* kPlanFormat = "remat-plan";  // the file's "format"
constexpr int64_t kPlanFormatVersion = 1;           // the file's "version": the one this remat writes and reads

// FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3), over the bytes as they are.
uint64_t fnv1a64(const std::string& bytes);
// "fnv1a64:" + fnv1a64(canonical_text) as 16 lowercase hex digits. A region's canonical text is,
// per call in order, `<op>(<out>,<out>,...);` with `<out>` = `<dtype>[<d0>x<d1>x...]` (`<dtype>[]`
// for a 0-dim tensor), dtype as plan_dtype_name names it.
std::string plan_fingerprint(const std::string& canonical_text);
// A dtype's name in a plan file: f32, f64, bf16, f16, i64, bool.
const char* plan_dtype_name(ScalarType t);

}  // namespace remat
