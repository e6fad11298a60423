// The rows of bench/ops as JSON, and PyTorch's figures for them (see op_rows.h).
#include "bench/op_rows.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "remat.h"

namespace remat::bench {

namespace {

using nlohmann::json;

json figure(double v) { return v < 0 ? json(nullptr) : json(v); }

// A non-negative number or null (-1) under `key` of a row; `from`: "ops --compare FILE" or
// "ops --beside COMMAND", for messages.
double optional_ms(const json& row, const char* key, const std::string& from, const std::string& where) {
  REMAT_CHECK(row.contains(key), from, ": ", where, " has no '", key, "'");
  const json& v = row.at(key);
  if (v.is_null()) return -1;
  REMAT_CHECK(v.is_number() && v.get<double>() >= 0, from, ": ", where, ": '", key,
              "' must be a number >= 0 or null, got ", v.dump());
  return v.get<double>();
}

}  // namespace

std::string figure_text(const char* format, double v) {
  char b[32] = "n/a";
  if (v >= 0) std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i) r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

std::string compare_header(bool ranges) {
  char b[96];
  std::snprintf(b, sizeof b, " %10s %7s%s %12s", "torch ms", "ratio", ranges ? "   rounds' range" : "", "torch out ms");
  return b;
}

std::string compare_columns(const OpRow& row, bool ranges) {
  std::string range;
  if (ranges) {
    char r[32] = "             n/a";
    if (row.ratio_min >= 0 && row.ratio_max >= 0) std::snprintf(r, sizeof r, " %7.2f - %-6.2f", row.ratio_min, row.ratio_max);
    range = r;
  }
  char b[128];
  std::snprintf(b, sizeof b, " %10s %7s%s %12s", figure_text("%.3f", row.torch_ms).c_str(),
                figure_text("%.2f", row.ratio()).c_str(), range.c_str(), figure_text("%.3f", row.torch_out_ms).c_str());
  return b;
}

void check_output_file(const std::string& flag, const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (path.empty() || path.back() == '/' || ::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      ::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(flag + ": cannot write " + cli_detail::quoted_path(path) + " (its folder " +
                     cli_detail::quoted_path(dir) + " is missing or not writable)");
}

std::string rows_json(const std::vector<OpRow>& rows, int threads, int reps, double min_sample_s,
                      const std::string& clock) {
  json list = json::array();
  for (const OpRow& r : rows) {
    list.push_back({{"op", r.op},
                    {"dtype", r.dtype},
                    {"shape", r.shape},
                    {"threads", r.threads},
                    {"remat_ms", figure(r.remat_ms)},
                    {"pct_copy", figure(r.pct_copy)},
                    {"gflops", figure(r.gflops)},
                    {"pct_peak", figure(r.pct_peak)},
                    {"torch_ms", figure(r.torch_ms)},
                    {"torch_out_ms", figure(r.torch_out_ms)},
                    {"ratio", figure(r.ratio())},
                    {"ratio_min", figure(r.ratio_min)},
                    {"ratio_max", figure(r.ratio_max)},
                    {"bound_function", r.bound_function.empty() ? json(nullptr) : json(r.bound_function)},
                    {"bound_ms", figure(r.bound_ms)},
                    {"pct_bound", figure(r.bound_ms > 0 && r.remat_ms > 0 ? 100.0 * r.bound_ms / r.remat_ms : -1)}});
  }
  json doc = {{"threads", threads}, {"reps", reps}, {"min_sample_s", min_sample_s}, {"clock", clock}, {"rows", list}};
  return doc.dump(1) + "\n";
}

TorchFigures parse_torch_figures(const std::string& source, const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  REMAT_CHECK(!doc.is_discarded() && doc.is_object(), "ops --compare ", source,
              ": not a JSON object (write it with bench/torch_ops.py --out)");
  for (const char* key : {"torch_version", "threads", "clock", "rows"})
    REMAT_CHECK(doc.contains(key), "ops --compare ", source, ": no '", key, "' key");
  REMAT_CHECK(doc["torch_version"].is_string() && doc["threads"].is_number_integer() && doc["threads"].get<int64_t>() >= 1 &&
                  doc["rows"].is_array() && (doc["clock"] == "wall" || doc["clock"] == "cpu"),
              "ops --compare ", source,
              ": 'torch_version' must be a string, 'threads' an integer >= 1, 'clock' \"wall\" or \"cpu\" and 'rows' a "
              "list");
  TorchFigures f;
  f.source = source;
  f.version = doc["torch_version"].get<std::string>();
  f.threads = doc["threads"].get<int>();
  f.clock = doc["clock"].get<std::string>();
  size_t i = 0;
  for (const json& row : doc["rows"]) {
    const std::string where = "row " + std::to_string(i++);
    REMAT_CHECK(row.is_object() && row.contains("op") && row["op"].is_string() && row.contains("dtype") &&
                    row["dtype"].is_string() && row.contains("shape") && row["shape"].is_array(),
                "ops --compare ", source, ": ", where, " needs 'op' and 'dtype' (strings) and 'shape' (a list)");
    TorchFigures::Figure fig;
    for (const json& d : row["shape"]) {
      REMAT_CHECK(d.is_number_integer(), "ops --compare ", source, ": ", where, ": 'shape' must hold integers, got ",
                  row["shape"].dump());
      fig.shape.push_back(d.get<int64_t>());
    }
    fig.ms = optional_ms(row, "torch_ms", "ops --compare " + source, where);
    fig.out_ms = optional_ms(row, "torch_out_ms", "ops --compare " + source, where);
    auto key = std::make_pair(row["op"].get<std::string>(), row["dtype"].get<std::string>());
    REMAT_CHECK(f.rows.emplace(key, fig).second, "ops --compare ", source, ": row '", key.first, "' ", key.second,
                " appears twice");
  }
  return f;
}

std::string torch_session_request(int threads, int reps, double min_sample_s, const std::string& clock) {
  return json({{"threads", threads}, {"reps", reps}, {"min_sample_s", min_sample_s}, {"clock", clock}}).dump();
}

TorchFigures parse_torch_session(const std::string& command, const std::string& answer, int threads,
                                 const std::string& clock) {
  const std::string from = "ops --beside " + command;
  json doc = json::parse(answer, nullptr, /*allow_exceptions=*/false);
  REMAT_CHECK(!doc.is_discarded() && doc.is_object(), from, ": its first answer is not a JSON object: ", answer,
              " (run bench/torch_ops.py --serve)");
  REMAT_CHECK(!doc.contains("error"), from, ": ",
              doc["error"].is_string() ? doc["error"].get<std::string>() : doc["error"].dump());
  REMAT_CHECK(doc.contains("torch_version") && doc["torch_version"].is_string() && doc.contains("threads") &&
                  doc["threads"].is_number_integer() && doc["threads"].get<int64_t>() >= 1 && doc.contains("clock") &&
                  (doc["clock"] == "wall" || doc["clock"] == "cpu"),
              from, ": its first answer needs 'torch_version' (a string), 'threads' (an integer >= 1) and 'clock' "
              "(\"wall\" or \"cpu\"), got ", answer);
  TorchFigures f;
  f.source = command;
  f.version = doc["torch_version"].get<std::string>();
  f.threads = doc["threads"].get<int>();
  f.clock = doc["clock"].get<std::string>();
  REMAT_CHECK(f.threads == threads && f.clock == clock, from, ": it times on ", f.threads, " thread(s) by the ", f.clock,
              " clock, asked for ", threads, " by the ", clock, " clock");
  return f;
}

std::string torch_row_request(const OpRow& row) {
  return json({{"op", row.op}, {"dtype", row.dtype}, {"shape", row.shape}}).dump();
}

TorchFigures::Figure parse_torch_row_answer(const std::string& command, const OpRow& row, const std::string& answer) {
  const std::string from = "ops --beside " + command;
  const std::string where = "row '" + row.op + "' " + row.dtype;
  json doc = json::parse(answer, nullptr, /*allow_exceptions=*/false);
  REMAT_CHECK(!doc.is_discarded() && doc.is_object(), from, ": its answer for ", where, " is not a JSON object: ",
              answer);
  REMAT_CHECK(!doc.contains("error"), from, ": ", where, ": ",
              doc["error"].is_string() ? doc["error"].get<std::string>() : doc["error"].dump());
  TorchFigures::Figure fig;
  fig.shape = row.shape;
  fig.ms = optional_ms(doc, "torch_ms", from, where);
  fig.out_ms = optional_ms(doc, "torch_out_ms", from, where);
  REMAT_CHECK(fig.ms > 0, from, ": ", where, ": 'torch_ms' must be a number > 0, got ", answer);
  return fig;
}

void check_torch_timing(const TorchFigures& figures, int threads, const std::string& clock) {
  REMAT_CHECK(figures.threads == threads, "ops --compare ", figures.source, ": PyTorch was timed on ", figures.threads,
              " thread(s), this run has ", threads, " (give bench/torch_ops.py the rows of the same --threads)");
  REMAT_CHECK(clock.empty() || figures.clock == clock, "ops --compare ", figures.source, ": PyTorch was timed by the ",
              figures.clock, " clock, this run by the ", clock, " clock (give bench/torch_ops.py the rows of the same "
              "--clock)");
}

void attach_torch_figures(std::vector<OpRow>& rows, const TorchFigures& figures) {
  const std::string& source = figures.source;
  for (OpRow& r : rows) {
    check_torch_timing(figures, r.threads);
    auto it = figures.rows.find({r.op, r.dtype});
    if (it == figures.rows.end()) continue;
    REMAT_CHECK(it->second.shape == r.shape, "ops --compare ", source, ": row '", r.op, "' ", r.dtype, " has shape ",
                shape_text(it->second.shape), " there, ", shape_text(r.shape),
                " in this run (run both with or both without --quick)");
    r.torch_ms = it->second.ms;
    r.torch_out_ms = it->second.out_ms;
  }
}

}  // namespace remat::bench
