// Test helper: plan files (checkpoint/plan_file.h) edited as JSON: a region's canonical text
// computed from its calls as docs/plan_format.md says (independently of remat's writer), and the
// fingerprints of an edited file made right again.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/plan_file.h"

namespace remat::testing {

// `<op>(<dtype>[<d0>x<d1>...],...);` per call of the region, in order.
template <class JsonT>
std::string canonical_text(const JsonT& region) {
  std::string text;
  for (const auto& c : region["calls"]) {
    text += c["op"].template get<std::string>() + "(";
    for (size_t k = 0; k < c["outputs"].size(); ++k) {
      text += (k ? "," : "") + c["outputs"][k]["dtype"].template get<std::string>() + "[";
      for (size_t d = 0; d < c["outputs"][k]["shape"].size(); ++d)
        text += (d ? "x" : "") + std::to_string(c["outputs"][k]["shape"][d].template get<int64_t>());
      text += "]";
    }
    text += ");";
  }
  return text;
}

// Every region's fingerprint recomputed from its calls.
template <class JsonT>
void refingerprint(JsonT* plan) {
  for (auto& r : (*plan)["regions"]) r["fingerprint"] = plan_fingerprint(canonical_text(r));
}

}  // namespace remat::testing
