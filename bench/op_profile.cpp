// Mirrors torch.profiler's key_averages() table: see bench/op_profile.h.
#include "bench/op_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

namespace remat::bench {

std::vector<IValue> OpProfile::dispatch(const OperatorHandle& op, const std::vector<IValue>& args) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<IValue> out = op.call(args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Row& row = by_op_[op.name()];
  if (row.op.empty()) row.op = op.name();
  ++row.calls;
  row.seconds += seconds;
  if (op.hasSchema()) row.bytes += bytes_moved(op.schema(), args, out);
  return out;
}

namespace {
// The bytes of t's distinct elements: a dim of stride 0 (an expanded one) is one element wide.
double distinct_bytes(const Tensor& t) {
  if (!t.defined()) return 0;
  double elements = 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[static_cast<size_t>(d)] != 0) elements *= static_cast<double>(t.sizes()[static_cast<size_t>(d)]);
  return elements * static_cast<double>(elementSize(t.dtype()));
}

template <class F>
void for_each_tensor(const IValue& v, F f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const Tensor& t : v.toTensorListRef()) f(t);
  }
}
}  // namespace

bool OpProfile::is_matmul(const std::string& op) {
  static const std::set<std::string> kMatmuls = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                                                  "aten::addbmm", "aten::matmul"};
  return kMatmuls.count(op) > 0;
}

double OpProfile::bytes_moved(const FunctionSchema& schema, const std::vector<IValue>& args,
                              const std::vector<IValue>& out) {
  std::vector<Tensor> inputs;
  const size_t n = std::min(args.size(), schema.arguments().size());
  for (size_t i = 0; i < n; ++i)
    for_each_tensor(args[i], [&](const Tensor& t) { if (t.defined()) inputs.push_back(t); });
  // An output sharing an argument's storage is that argument (a view, _unsafe_view, an in-place
  // op's self): written only if the op mutates it, counted below.
  auto aliases_input = [&](const Tensor& t) {
    for (const Tensor& in : inputs)
      if (t.is_alias_of(in)) return true;
    return false;
  };
  double bytes = 0;
  bool fresh_output = false;
  for (const IValue& v : out)
    for_each_tensor(v, [&](const Tensor& t) {
      if (!t.defined() || aliases_input(t)) return;
      fresh_output = true;
      bytes += distinct_bytes(t);
    });
  if (!fresh_output && !schema.is_mutable() && !out.empty()) return 0;  // a view: metadata only
  std::set<const void*> read;  // a tensor passed twice is read once
  for (size_t i = 0; i < n; ++i) {
    const bool written = schema.arguments()[i].is_mutable();
    for_each_tensor(args[i], [&](const Tensor& t) {
      if (!t.defined()) return;
      if (read.insert(t.data_ptr()).second) bytes += distinct_bytes(t);
      if (written) bytes += distinct_bytes(t);
    });
  }
  return bytes;
}

std::vector<OpProfile::Row> OpProfile::rows() const {
  std::vector<Row> rows;
  for (const auto& [name, row] : by_op_) rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  return rows;
}

std::string OpProfile::table(int64_t steps, size_t limit) const {
  REMAT_CHECK(steps >= 1, "OpProfile::table: expected steps >= 1, got ", steps);
  const std::vector<Row> all = rows();
  double total = 0;
  for (const Row& r : all) total += r.seconds;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-48s %10s %10s %7s %10s %8s\n", "op (per step)", "calls", "ms", "%", "MB moved",
                "GB/s");
  out += line;
  auto add = [&](const std::string& name, double calls, double seconds, double bytes) {
    std::snprintf(line, sizeof line, "%-48s %10.1f %10.3f %6.1f%% %10.2f %8.1f\n", name.c_str(), calls, seconds * 1e3,
                  total > 0 ? 100 * seconds * steps / total : 0.0, bytes / 1e6, seconds > 0 ? bytes / seconds / 1e9 : 0.0);
    out += line;
  };
  double rest_calls = 0, rest_seconds = 0, rest_bytes = 0, all_calls = 0, all_bytes = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const double calls = static_cast<double>(all[i].calls) / steps, seconds = all[i].seconds / steps,
                 bytes = all[i].bytes / steps;
    all_calls += calls;
    all_bytes += bytes;
    if (i < limit) {
      add(all[i].op, calls, seconds, bytes);
    } else {
      rest_calls += calls;
      rest_seconds += seconds;
      rest_bytes += bytes;
    }
  }
  if (all.size() > limit)
    add("(" + std::to_string(all.size() - limit) + " other ops)", rest_calls, rest_seconds, rest_bytes);
  add("total", all_calls, total / steps, all_bytes);
  return out;
}

std::string OpProfile::roofline(int64_t steps, double copy_bytes_per_s) const {
  REMAT_CHECK(steps >= 1, "OpProfile::roofline: expected steps >= 1, got ", steps);
  REMAT_CHECK(copy_bytes_per_s > 0, "OpProfile::roofline: expected a copy bandwidth > 0, got ", copy_bytes_per_s);
  double matmul_s = 0, other_s = 0, other_bytes = 0;
  for (const auto& [name, row] : by_op_) {
    if (is_matmul(name)) {
      matmul_s += row.seconds;
    } else {
      other_s += row.seconds;
      other_bytes += row.bytes;
    }
  }
  matmul_s /= steps;
  other_s /= steps;
  other_bytes /= steps;
  const double floor_s = other_bytes / copy_bytes_per_s;
  char text[512];
  std::snprintf(text, sizeof text,
                "matrix products (mm, addmm, bmm, ...): %.3f ms per step\n"
                "the other ops: %.3f ms per step moving %.2f MB; at the copy bandwidth (%.1f GB/s) those bytes take "
                "%.3f ms (the ops run at %.0f%% of it)\n",
                matmul_s * 1e3, other_s * 1e3, other_bytes / 1e6, copy_bytes_per_s / 1e9, floor_s * 1e3,
                other_s > 0 ? 100 * floor_s / other_s : 0.0);
  return text;
}

}  // namespace remat::bench
