// Writing a checkpoint plan as a file (see checkpoint/plan_file.h and docs/plan_format.md; no
// PyTorch counterpart): CheckpointPlan::to_json and save, the fingerprint and the dtype names.
// Reading is checkpoint/plan_file_read.cpp.
#include "checkpoint/plan_file.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkpoint/plan_data.h"
#include "checkpoint/planner.h"
#include "engine/core/file_io.h"

namespace remat {

using Json = nlohmann::ordered_json;
using namespace planner_detail;

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string plan_fingerprint(const std::string& canonical_text) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(canonical_text)));
  return std::string("fnv1a64:") + hex;
}

const char* plan_dtype_name(ScalarType t) {
  switch (t) {
    case kFloat: return "f32";
    case kDouble: return "f64";
    case kBFloat16: return "bf16";
    case kHalf: return "f16";
    case kLong: return "i64";
    case kBool: return "bool";
    // PyTorch's names (python/remat_plan writes str(dtype) for the dtypes it has no short name for)
    case kComplexFloat: return "complex64";
    case kComplexDouble: return "complex128";
  }
  return "unknown";
}

namespace planner_detail {

std::string canonical_call(const std::string& op, const std::vector<Data::Call::Output>& outputs) {
  std::string s = op + "(";
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i > 0) s += ",";
    s += plan_dtype_name(outputs[i].dtype);
    s += "[";
    for (size_t d = 0; d < outputs[i].shape.size(); ++d) s += (d > 0 ? "x" : "") + std::to_string(outputs[i].shape[d]);
    s += "]";
  }
  return s + ");";
}

const char* decision_name(const Data::Call& c) { return c.offloaded ? "offload" : c.kept ? "save" : "recompute"; }

std::vector<const Data::Region*> file_regions(const Data& data) {
  std::set<std::string> seen;
  std::vector<const Data::Region*> regions;
  for (const Data::Region& r : data.regions)
    if (seen.insert(r.scope).second) regions.push_back(&r);
  return regions;
}

std::string region_fingerprint(const Data& data, const Data::Region& r) {
  std::string text;
  for (size_t c : r.calls) text += canonical_call(data.calls[c].op, data.calls[c].outputs);
  return plan_fingerprint(text);
}

}  // namespace planner_detail

namespace {

// The dtype the plan trains in: its first matrix product's output's (mm, addmm, bmm: the
// parameters' dtype), else its first floating-point output's (f32 when it has none). Not simply the
// first output: a bf16 Llama's blocks open with RMSNorm's upcast to f32 (rms_norm_composite).
const char* plan_dtype(const Data& data) {
  for (bool matmuls_only : {true, false})
    for (const Data::Region& r : data.regions)
      for (size_t c : r.calls) {
        const Data::Call& call = data.calls[c];
        if (matmuls_only && call.op != "aten::mm" && call.op != "aten::addmm" && call.op != "aten::bmm") continue;
        for (const Data::Call::Output& o : call.outputs)
          if (isFloatingType(o.dtype)) return plan_dtype_name(o.dtype);
      }
  return "f32";
}

Json call_json(const Data& data, size_t c, int64_t index) {
  const Data::Call& call = data.calls[c];
  Json outputs = Json::array();
  for (const Data::Call::Output& o : call.outputs)
    outputs.push_back(Json{{"dtype", plan_dtype_name(o.dtype)}, {"shape", o.shape}});
  Json args = Json::array();
  for (const Shape& s : call.arg_shapes) args.push_back(s);
  // The scope: the part of the key before " / <op> / #<index>" ("<top>" for the empty scope).
  std::string scope = call.key.substr(0, call.key.size() - call.op.size() - 7 - std::to_string(index).size());
  if (scope == "<top>") scope.clear();
  return Json{{"op", call.op}, {"index", index}, {"outputs", outputs}, {"decision", decision_name(call)},
              {"scope", scope}, {"arg_shapes", args}, {"bytes", call.bytes}};
}

}  // namespace

std::string CheckpointPlan::to_json() const {
  if (data == nullptr) throw CheckpointError("CheckpointPlan::to_json: an empty plan (make one with plan_checkpointing)");
  const Data& d = *data;
  Json top;
  top["format"] = kPlanFormat;
  top["version"] = kPlanFormatVersion;
  top["budget_bytes"] = budget_bytes;
  top["counter"] = toString(counter);
  top["device"] = d.options.device.is_cuda() ? "cuda" : "cpu";
  top["dtype"] = plan_dtype(d);
  top["predicted"] = Json{{"peak_bytes", predicted_peak_bytes},
                          {"activation_bytes", predicted_activation_bytes},
                          {"host_peak_bytes", predicted_host_peak_bytes},
                          {"allocated_peak_bytes", predicted_allocated_peak_bytes},
                          {"reserved_peak_bytes", predicted_reserved_peak_bytes},
                          {"recompute_flops", recompute_flops},
                          {"overhead_seconds", predicted_overhead_seconds},
                          {"recompute_all_peak_bytes", recompute_all_peak_bytes},
                          {"keep_all_peak_bytes", keep_all_peak_bytes}};
  top["host_budget_bytes"] = host_budget_bytes;
  // NaN or Inf, which JSON cannot hold (nlohmann writes null), would make a file no reader reads back.
  for (const auto& [name, v] : {std::pair<const char*, double>{"recompute_flops", recompute_flops},
                                {"overhead_seconds", predicted_overhead_seconds}})
    if (!std::isfinite(v))
      throw CheckpointError(std::string("CheckpointPlan::to_json: predicted.") + name + " is " + std::to_string(v) +
                            ", which JSON cannot hold; no file is written (it could not be read back)");
  // One call per line, so that two plans diff call by call.
  std::string text = top.dump(2);
  text.erase(text.rfind('}'));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  text += ",\n  \"regions\": [";
  const std::vector<const Data::Region*> regions = file_regions(d);
  for (size_t i = 0; i < regions.size(); ++i) {
    const Data::Region& r = *regions[i];
    text += (i > 0 ? ",\n    {" : "\n    {");
    text += "\"name\": " + Json(r.scope).dump() + ", \"fingerprint\": " + Json(region_fingerprint(d, r)).dump() +
            ", \"calls\": [";
    std::map<std::string, int64_t> per_op;
    for (size_t k = 0; k < r.calls.size(); ++k) {
      const size_t c = r.calls[k];
      text += (k > 0 ? ",\n      " : "\n      ") + call_json(d, c, per_op[d.calls[c].op]++).dump();
    }
    text += r.calls.empty() ? "]}" : "\n    ]}";
  }
  text += regions.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return text;
}

void CheckpointPlan::save(const std::string& path) const {
  const std::string text = to_json();
  // To a temporary name, the write and the close checked, then renamed (engine/core/file_io.h): a
  // failed save (a full disk) leaves no half-written plan.
  try {
    write_file_atomically(path, text);
  } catch (const Error& e) {
    throw CheckpointError("CheckpointPlan::save: " + std::string(e.what()));
  }
}

}  // namespace remat
