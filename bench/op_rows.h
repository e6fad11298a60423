// The rows of bench/ops beside PyTorch's same op (no PyTorch counterpart; bench/torch_ops.py times
// PyTorch's side). `ops --list-rows` writes the rows as JSON (rows_json with no figures), the
// script times each row in PyTorch and writes its figures as JSON, and `ops --compare FILE` reads
// them (parse_torch_figures) to print remat's ms, PyTorch's ms and the ratio side by side;
// `ops --json FILE` writes the rows with every figure (rows_json).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace remat::bench {

// One row of `ops`: an op in one dtype at one shape on `threads` threads. A figure < 0 is absent.
struct OpRow {
  std::string op;     // the row's name in the table, e.g. "add  (a + b)": with dtype, its key
  std::string dtype;  // "f32" or "bf16"
  std::vector<int64_t> shape;
  int threads = 1;
  double remat_ms = -1;
  double pct_copy = -1;      // remat's GB/s over the copy bandwidth of the same run, in % (memory-bound rows)
  // A matrix product's row: remat's GFLOP/s (2 m n k [x batch] over its time), and that over the
  // FP32 FMA peak of the same run, in % (f32 rows only: bf16 runs on other units).
  double gflops = -1, pct_peak = -1;
  double torch_ms = -1;      // PyTorch as a user calls it (a fresh output allocated, page faults included)
  double torch_out_ms = -1;  // PyTorch writing into an existing output (out= or copy_); < 0: no such form
  // For an op bounded by arithmetic (bench/op_bounds.h): the function ("tanh", "erf", "exp",
  // "philox"; empty for the others) and the time that function alone needs for the op's calls.
  std::string bound_function;
  double bound_ms = -1;
  // `ops --beside`: the lowest and highest remat / PyTorch ratio of the rounds (each round times
  // remat's op, then PyTorch's); < 0 without --beside.
  double ratio_min = -1, ratio_max = -1;
  // remat_ms / torch_ms, or < 0 when either is absent.
  double ratio() const { return remat_ms > 0 && torch_ms > 0 ? remat_ms / torch_ms : -1; }
};

// The rows as a JSON document: {"threads": N, "reps": R, "min_sample_s": S, "clock": "wall" or
// "cpu", "rows": [{"op", "dtype",
// "shape", "threads", "remat_ms", "pct_copy", "gflops", "pct_peak", "torch_ms", "torch_out_ms", "ratio", "ratio_min", "ratio_max", "bound_function",
// "bound_ms", "pct_bound"}, ...]}, an absent figure (and bound_function of a row with none) as
// null; pct_bound = 100 bound_ms / remat_ms. reps, min_sample_s and clock: how `ops` times a row (clock "cpu": the
// process's CPU time), so that the script does alike.
std::string rows_json(const std::vector<OpRow>& rows, int threads, int reps, double min_sample_s,
                      const std::string& clock);

// PyTorch's figures as bench/torch_ops.py writes them, keyed by (op, dtype).
struct TorchFigures {
  std::string source;   // the file, for messages
  std::string version;  // torch.__version__
  int threads = 0;      // torch.get_num_threads() while timing
  std::string clock;    // "wall" or "cpu", as the rows it was given
  struct Figure {
    std::vector<int64_t> shape;
    double ms = -1, out_ms = -1;
  };
  std::map<std::pair<std::string, std::string>, Figure> rows;
};

// Parses the script's JSON ({"torch_version", "threads", "clock", "rows": [{"op", "dtype", "shape",
// "torch_ms", "torch_out_ms"}]}). `source` names the file in messages. Throws remat::Error on bad
// JSON, a missing or mistyped key and a repeated row.
TorchFigures parse_torch_figures(const std::string& source, const std::string& text);

// Fills torch_ms and torch_out_ms of every row the figures have. Throws remat::Error when the
// figures were taken on another thread count or at another shape than the row's (both runs must
// time the same thing: same --threads, both with or both without --quick).
void attach_torch_figures(std::vector<OpRow>& rows, const TorchFigures& figures);

// `ops --beside COMMAND` asks `bench/torch_ops.py --serve` (bench/peer_process.h) for PyTorch's
// figures a row at a time, one JSON line each way. First how to time, {"threads", "reps",
// "min_sample_s", "clock"}; it answers {"torch_version", "threads", "clock"} (parse_torch_session:
// figures with no rows, `source` the command; throws remat::Error on a malformed answer, an
// {"error": ...} one, or another thread count or clock than asked). Then a row at a time, {"op",
// "dtype", "shape"}; it answers {"torch_ms", "torch_out_ms"} (torch_out_ms null where the op has no
// out= form) or {"error": "..."} (parse_torch_row_answer throws remat::Error with it).
std::string torch_session_request(int threads, int reps, double min_sample_s, const std::string& clock);
TorchFigures parse_torch_session(const std::string& command, const std::string& answer, int threads,
                                 const std::string& clock);
std::string torch_row_request(const OpRow& row);
TorchFigures::Figure parse_torch_row_answer(const std::string& command, const OpRow& row, const std::string& answer);

// Throws remat::Error unless the figures were taken on `threads` threads (and, given, by `clock`).
void check_torch_timing(const TorchFigures& figures, int threads, const std::string& clock = "");

// The columns `ops --compare` adds to a table: PyTorch's ms, the ratio, PyTorch's ms without the
// allocation ("n/a" for an absent figure), each with a leading space; with `ranges` (`ops
// --beside`), the lowest and highest of the rounds' ratios after the ratio.
std::string compare_header(bool ranges = false);
std::string compare_columns(const OpRow& row, bool ranges = false);

// A figure as `format` prints it ("%.3f"), "n/a" when absent (< 0).
std::string figure_text(const char* format, double v);

// "[4096, 4096]".
std::string shape_text(const std::vector<int64_t>& shape);

// Throws UsageError ("--json: cannot write 'PATH': ...") unless PATH's folder exists and can be
// written into, so that a long run is not lost to a typo in the path.
void check_output_file(const std::string& flag, const std::string& path);

}  // namespace remat::bench
