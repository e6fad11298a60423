// Mirrors torch.profiler's key_averages() table: see bench/op_profile.h.
#include "bench/op_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace remat::bench {

std::vector<IValue> OpProfile::dispatch(const OperatorHandle& op, const std::vector<IValue>& args) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<IValue> out = op.call(args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Row& row = by_op_[op.name()];
  if (row.op.empty()) row.op = op.name();
  ++row.calls;
  row.seconds += seconds;
  return out;
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
  std::snprintf(line, sizeof line, "%-48s %10s %10s %7s\n", "op (per step)", "calls", "ms", "%");
  out += line;
  auto add = [&](const std::string& name, double calls, double seconds) {
    std::snprintf(line, sizeof line, "%-48s %10.1f %10.3f %6.1f%%\n", name.c_str(), calls, seconds * 1e3,
                  total > 0 ? 100 * seconds * steps / total : 0.0);
    out += line;
  };
  double rest_calls = 0, rest_seconds = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < limit) {
      add(all[i].op, static_cast<double>(all[i].calls) / steps, all[i].seconds / steps);
    } else {
      rest_calls += static_cast<double>(all[i].calls) / steps;
      rest_seconds += all[i].seconds / steps;
    }
  }
  if (all.size() > limit) add("(" + std::to_string(all.size() - limit) + " other ops)", rest_calls, rest_seconds);
  add("total", [&] { double c = 0; for (const Row& r : all) c += static_cast<double>(r.calls) / steps; return c; }(),
      total / steps);
  return out;
}

}  // namespace remat::bench
