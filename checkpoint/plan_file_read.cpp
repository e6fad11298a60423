// Reading a checkpoint plan file (see checkpoint/plan_file.h and docs/plan_format.md; no PyTorch
// counterpart): CheckpointPlan::from_json and load, every field checked (a bad file throws
// CheckpointError naming what is wrong and its JSON path, quoting at most 100 characters of the
// file), and the policy of a plan read from a file.
#include <algorithm>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkpoint/offload.h"
#include "checkpoint/plan_data.h"
#include "checkpoint/plan_file.h"
#include "checkpoint/planner.h"
#include "engine/core/file_io.h"

namespace remat {

using Json = nlohmann::json;
using namespace planner_detail;

namespace {

constexpr int kMaxDepth = 32;      // deeper nesting is refused before parsing (a plan needs 6)
constexpr size_t kMaxQuoted = 100;  // characters of the file an error message quotes at most
// Untrusted files, bounded (docs/plan_format.md): a file of more bytes is refused before it is
// parsed, and a plan of more regions, or more calls in all its regions, before any is read. A
// plan of 200,000 calls is 20 to 50 MB.
constexpr size_t kMaxBytes = size_t{512} << 20;
constexpr size_t kMaxRegions = 100'000;
constexpr size_t kMaxCalls = 2'000'000;

// `text` in quotes, control bytes and bytes >= 0x7f as \xNN, cut to kMaxQuoted characters.
std::string quote_input(const std::string& text) {
  std::string out = "'";
  size_t shown = 0;
  for (unsigned char c : text) {
    if (shown++ == kMaxQuoted) return out + "'...";
    if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw CheckpointError("CheckpointPlan::from_json: " + (where.empty() ? "" : where + ": ") + what);
}

std::string shown(const Json& v) { return v.type_name() + std::string(" ") + quote_input(v.dump()); }

const Json& field(const Json& object, const char* name, const std::string& where) {
  auto it = object.find(name);
  if (it == object.end()) fail(where, std::string("missing field '") + name + "'");
  return *it;
}

std::string path(const std::string& where, const char* name) { return where.empty() ? name : where + "." + name; }

int64_t integer(const Json& v, const std::string& where, int64_t min) {
  if (!v.is_number_integer()) fail(where, "expected an integer, got " + shown(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail(where, "the integer " + quote_input(v.dump()) + " is too large");
  const int64_t x = v.get<int64_t>();
  if (x < min) fail(where, "expected an integer >= " + std::to_string(min) + ", got " + std::to_string(x));
  return x;
}

int64_t integer_field(const Json& object, const char* name, const std::string& where, int64_t min = 0) {
  return integer(field(object, name, where), path(where, name), min);
}

std::string string_field(const Json& object, const char* name, const std::string& where) {
  const Json& v = field(object, name, where);
  if (!v.is_string()) fail(path(where, name), "expected a string, got " + shown(v));
  return v.get<std::string>();
}

std::string one_of(const Json& object, const char* name, const std::string& where,
                   const std::vector<std::string>& choices, const char* what = "") {
  const std::string s = string_field(object, name, where);
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i) list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  fail(path(where, name), std::string(what) + quote_input(s) + " (expected " + list + ")");
}

const Json& typed(const Json& object, const char* name, const std::string& where, bool array) {
  const Json& v = field(object, name, where);
  if (array ? !v.is_array() : !v.is_object())
    fail(path(where, name), std::string("expected an ") + (array ? "array" : "object") + ", got " + shown(v));
  return v;
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names = {"f32", "f64", "bf16", "f16", "i64", "bool", "complex64", "complex128"};
  return names;
}

ScalarType dtype_of(const std::string& name) {
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool, kComplexFloat, kComplexDouble})
    if (name == plan_dtype_name(t)) return t;
  return kFloat;  // one_of admitted only the names above
}

Shape shape_of(const Json& v, const std::string& where, int64_t min) {
  if (!v.is_array()) fail(where, "expected an array of integers, got " + shown(v));
  Shape s;
  for (size_t d = 0; d < v.size(); ++d) s.push_back(integer(v[d], where + "[" + std::to_string(d) + "]", min));
  return s;
}

// Nesting deeper than kMaxDepth is refused before the parser sees it.
void check_depth(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        fail("", "malformed JSON: nested deeper than " + std::to_string(kMaxDepth) + " levels at byte " +
                     std::to_string(i) + " (a plan file nests 6)");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// nlohmann's message without its tag and its quote of the input, cut to kMaxQuoted characters.
std::string parser_message(const std::string& what) {
  std::string m = what;
  const size_t cut = m.find("; last read");
  if (cut != std::string::npos) m.erase(cut);
  const size_t tag = m.find("] ");
  if (tag != std::string::npos) m.erase(0, tag + 2);
  return m.size() > 2 * kMaxQuoted ? m.substr(0, 2 * kMaxQuoted) + "..." : m;
}

Json parse(const std::string& text) {
  if (text.size() > kMaxBytes)
    fail("", "the file is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                 std::to_string(kMaxBytes) + " (docs/plan_format.md)");
  check_depth(text);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    const size_t at = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, text.size());
    const size_t from = at > 20 ? at - 20 : 0;
    fail("", "malformed JSON: " + parser_message(e.what()) + ", near " + quote_input(text.substr(from, 40)));
  } catch (const Json::exception& e) {  // a number out of range
    fail("", "malformed JSON: " + parser_message(e.what()));
  }
}

struct Figures {
  int64_t peak = 0, activation = 0, host_peak = 0, allocated_peak = 0, reserved_peak = 0;
  int64_t recompute_all = 0, keep_all = 0;
  double flops = 0, overhead = 0;
};

double number_or(const Json& object, const char* name, const std::string& where, double otherwise) {
  auto it = object.find(name);
  if (it == object.end()) return otherwise;
  if (!it->is_number() || it->get<double>() < 0) fail(path(where, name), "expected a number >= 0, got " + shown(*it));
  return it->get<double>();
}

int64_t integer_or(const Json& object, const char* name, const std::string& where, int64_t otherwise) {
  return object.contains(name) ? integer_field(object, name, where) : otherwise;
}

Figures figures(const Json& p) {
  Figures f;
  const std::string w = "predicted";
  f.peak = integer_field(p, "peak_bytes", w);
  f.activation = integer_field(p, "activation_bytes", w);
  f.host_peak = integer_field(p, "host_peak_bytes", w);
  f.allocated_peak = integer_or(p, "allocated_peak_bytes", w, 0);
  f.reserved_peak = integer_or(p, "reserved_peak_bytes", w, 0);
  f.recompute_all = integer_or(p, "recompute_all_peak_bytes", w, 0);
  f.keep_all = integer_or(p, "keep_all_peak_bytes", w, 0);
  f.flops = number_or(p, "recompute_flops", w, 0);
  f.overhead = number_or(p, "overhead_seconds", w, 0);
  return f;
}

// One call of a region: checked, and added to data (its key by the region's name).
void read_call(const Json& call, const std::string& where, const std::string& region, bool cpu,
               std::map<std::string, int64_t>* per_op, std::string* canonical, Data* data) {
  if (!call.is_object()) fail(where, "expected an object, got " + shown(call));
  auto op_it = call.find("op");
  if (op_it == call.end() || (op_it->is_string() && op_it->get<std::string>().empty()))
    fail(where, "a decision that names no op (the call's 'op' is " + std::string(op_it == call.end() ? "missing" : "empty") +
                    ")");
  if (!op_it->is_string()) fail(where + ".op", "expected a string, got " + shown(*op_it));
  Data::Call c;
  c.op = op_it->get<std::string>();
  try {
    find_op(c.op);
  } catch (const Error&) {
    fail(where + ".op", quote_input(c.op) + " is not an op remat knows (a decision that names no op)");
  }
  const int64_t index = integer_field(call, "index", where);
  const int64_t expected = (*per_op)[c.op]++;
  if (index != expected)
    fail(where + ".index", "is " + std::to_string(index) + ", but this is the region's call #" +
                               std::to_string(expected) + " of " + c.op + " (each op's calls count from 0)");
  const Json& outputs = typed(call, "outputs", where, /*array=*/true);
  for (size_t o = 0; o < outputs.size(); ++o) {
    const std::string w = where + ".outputs[" + std::to_string(o) + "]";
    if (!outputs[o].is_object()) fail(w, "expected an object, got " + shown(outputs[o]));
    const ScalarType t = dtype_of(one_of(outputs[o], "dtype", w, dtype_names(), "unknown dtype "));
    c.outputs.push_back(Data::Call::Output{t, shape_of(field(outputs[o], "shape", w), w + ".shape", 0)});
  }
  const std::string decision = one_of(call, "decision", where, {"save", "recompute", "offload"}, "unknown decision ");
  if (decision == "offload" && cpu)
    fail(where + ".decision", "offload in a plan for cpu (only a plan for cuda offloads: its tensors leave the device)");
  c.kept = decision == "save";
  c.offloaded = decision == "offload";
  c.needed = c.kept || c.offloaded;
  if (call.contains("arg_shapes")) {
    const Json& args = typed(call, "arg_shapes", where, /*array=*/true);
    for (size_t a = 0; a < args.size(); ++a)
      c.arg_shapes.push_back(shape_of(args[a], where + ".arg_shapes[" + std::to_string(a) + "]", -1));
  } else {
    c.arg_shapes_known = false;
  }
  c.bytes = integer_or(call, "bytes", where, 0);
  std::string scope = region;
  if (call.contains("scope")) scope = string_field(call, "scope", where);
  // The key policy() finds the call by is the region's; kept/offloaded list the call's own scope.
  c.key = call_key(scope, c.op, index);
  *canonical += canonical_call(c.op, c.outputs);
  data->by_key.emplace(call_key(region, c.op, index), data->calls.size());
  data->regions.back().calls.push_back(data->calls.size());
  data->calls.push_back(std::move(c));
}

}  // namespace

CheckpointPlan CheckpointPlan::from_json(const std::string& text) {
  const Json top = parse(text);
  if (!top.is_object()) fail("", "expected a JSON object (a remat plan), got " + shown(top));
  const std::string format = string_field(top, "format", "");
  if (format != kPlanFormat) fail("format", "not a remat plan: the format is " + quote_input(format) + ", not 'remat-plan'");
  const int64_t version = integer_field(top, "version", "", INT64_MIN);
  if (version != kPlanFormatVersion)
    fail("version", "version " + std::to_string(version) + " is not supported: this remat reads version " +
                        std::to_string(kPlanFormatVersion));
  CheckpointPlan plan;
  auto data = std::make_shared<Data>();
  data->loaded = true;
  plan.budget_bytes = integer_field(top, "budget_bytes", "");
  plan.counter = one_of(top, "counter", "", {"allocated", "reserved"}) == "reserved" ? MemoryCounter::Reserved
                                                                                     : MemoryCounter::Allocated;
  const bool cpu = one_of(top, "device", "", {"cpu", "cuda"}) == "cpu";
  if (cpu && plan.counter == MemoryCounter::Reserved)
    fail("counter", "'reserved' in a plan for cpu (only cuda's reserved bytes are predicted)");
  one_of(top, "dtype", "", dtype_names(), "unknown dtype ");
  const Figures f = figures(typed(top, "predicted", "", /*array=*/false));
  plan.host_budget_bytes = integer_or(top, "host_budget_bytes", "", 0);
  data->options.budget_bytes = plan.budget_bytes;
  data->options.device = cpu ? Device{kCPU} : Device{kCUDA, 0};
  data->options.counter = plan.counter;
  data->options.host_budget_bytes = plan.host_budget_bytes;
  const Json& regions = typed(top, "regions", "", /*array=*/true);
  if (regions.size() > kMaxRegions)
    fail("regions", "the plan has " + std::to_string(regions.size()) + " regions, more than the limit of " +
                        std::to_string(kMaxRegions) + " (docs/plan_format.md)");
  size_t total_calls = 0;
  std::map<std::string, size_t> names;
  for (size_t i = 0; i < regions.size(); ++i) {
    std::string where = "regions[" + std::to_string(i) + "]";
    const Json& r = regions[i];
    if (!r.is_object()) fail(where, "expected an object, got " + shown(r));
    const std::string name = string_field(r, "name", where);
    auto [seen, fresh] = names.emplace(name, i);
    if (!fresh) fail(where + ".name", "the region " + quote_input(name) + " is listed twice (also regions[" +
                                          std::to_string(seen->second) + "])");
    where += " (" + quote_input(name) + ")";
    const std::string fingerprint = string_field(r, "fingerprint", where);
    data->regions.push_back(Data::Region{name, {}, 0, 0, 0});
    const Json& calls = typed(r, "calls", where, /*array=*/true);
    total_calls += calls.size();
    if (total_calls > kMaxCalls)
      fail(where + ".calls", "the plan has more than " + std::to_string(kMaxCalls) +
                                 " calls in all its regions, the limit (docs/plan_format.md)");
    std::map<std::string, int64_t> per_op;
    std::string canonical;
    for (size_t k = 0; k < calls.size(); ++k)
      read_call(calls[k], where + ".calls[" + std::to_string(k) + "]", name, cpu, &per_op, &canonical, data.get());
    if (fingerprint != plan_fingerprint(canonical))
      fail(where + ".fingerprint", quote_input(fingerprint) + " is not the fingerprint of the region's calls, " +
                                       plan_fingerprint(canonical) + " (docs/plan_format.md)");
  }
  for (const Data::Call& c : data->calls) {
    if (c.kept) plan.kept.push_back(c.key);
    if (c.offloaded) plan.offloaded.push_back(c.key), plan.offloaded_bytes += c.bytes;
  }
  plan.predicted_peak_bytes = f.peak;
  plan.predicted_activation_bytes = f.activation;
  plan.predicted_host_peak_bytes = f.host_peak;
  plan.predicted_allocated_peak_bytes = f.allocated_peak;
  plan.predicted_reserved_peak_bytes = f.reserved_peak;
  plan.recompute_all_peak_bytes = f.recompute_all;
  plan.keep_all_peak_bytes = f.keep_all;
  plan.recompute_flops = f.flops;
  plan.predicted_overhead_seconds = plan.predicted_recompute_seconds = f.overhead;
  plan.data = std::move(data);
  return plan;
}

CheckpointPlan CheckpointPlan::load(const std::string& path) {
  // A regular file (a FIFO would never end), of at most kMaxBytes (engine/core/file_io.h).
  std::string text;
  try {
    text = read_input_file(path, "CheckpointPlan::load", kMaxBytes);
  } catch (const Error& e) {
    throw CheckpointError(e.what());
  }
  try {
    return from_json(text);
  } catch (const CheckpointError& e) {
    throw CheckpointError("CheckpointPlan::load('" + path + "'): " + std::string(e.what()));
  }
}

namespace planner_detail {

PolicyFn loaded_policy(std::shared_ptr<const Data> d) {
  return [d](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>& args) {
    const Data::Region* region = nullptr;  // the innermost region whose name is the scope or encloses it
    for (const Data::Region& r : d->regions) {
      const std::string& n = r.scope;
      const bool within = n.empty() || ctx.scope == n || (ctx.scope.size() > n.size() && ctx.scope.compare(0, n.size(), n) == 0 &&
                                                          ctx.scope[n.size()] == '.');
      if (within && (region == nullptr || n.size() > region->scope.size())) region = &r;
    }
    const std::string call = op.name() + " #" + std::to_string(ctx.index) + " (scope '" + ctx.scope + "')";
    if (region == nullptr) {
      throw CheckpointError("CheckpointPlan (read from a file): the call " + call + " is in none of the plan's " +
                            std::to_string(d->regions.size()) +
                            " regions: the plan is for another model (plan again for this one)");
    }
    auto it = d->by_key.find(call_key(region->scope, op.name(), ctx.index));
    if (it == d->by_key.end()) {
      int64_t n = 0;
      for (size_t c : region->calls) n += d->calls[c].op == op.name();
      throw CheckpointError("CheckpointPlan (read from a file): region '" + region->scope + "' differs from the model's: "
                            "the model's call " + call + " is not in the plan, whose region has " + std::to_string(n) +
                            " calls of " + op.name() + " (plan again for this model)");
    }
    const Data::Call& c = d->calls[it->second];
    const std::vector<Shape> shapes = arg_shapes(args);
    if (c.arg_shapes_known && shapes != c.arg_shapes) {
      std::ostringstream os;
      os << "CheckpointPlan (read from a file): region '" << region->scope << "' differs from the model's at the call "
         << call << ": its arguments have shapes";
      for (const Shape& s : shapes) os << " " << s;
      os << ", the plan's";
      for (const Shape& s : c.arg_shapes) os << " " << s;
      os << " (plan again for this configuration)";
      throw CheckpointError(os.str());
    }
    if (c.offloaded) {
      for (const IValue& a : args) {
        if (!a.isTensor() || !a.toTensor().defined()) continue;
        if (!offload_supported(a.toTensor().device()))
          throw CheckpointError("CheckpointPlan (read from a file): region '" + region->scope + "' offloads the call " +
                                call + ", but it runs on " + a.toTensor().device().str() + ", which does not offload");
        break;
      }
      return CheckpointPolicy::MUST_CPU_OFFLOAD;
    }
    return c.kept ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

}  // namespace planner_detail
}  // namespace remat
