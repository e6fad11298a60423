// Tests bench/op_rows.{h,cpp} (no PyTorch counterpart): the rows of `ops` as JSON, and PyTorch's
// figures (bench/torch_ops.py's JSON) read back, checked and put beside them.
#include "bench/op_rows.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "remat.h"

using namespace remat;
using namespace remat::bench;

namespace {

const char* kFigures = R"j({"torch_version": "2.15.0", "threads": 2, "clock": "wall", "rows": [
  {"op": "add  (a + b)", "dtype": "f32", "shape": [4, 8], "torch_ms": 2.0, "torch_out_ms": 1.0},
  {"op": "sum (all)", "dtype": "bf16", "shape": [4, 8], "torch_ms": 0.5, "torch_out_ms": null}]})j";

std::string figures_with_row(const std::string& row) {
  return R"j({"torch_version": "2.15.0", "threads": 2, "clock": "wall", "rows": [)j" + row + "]}";
}

}  // namespace

TEST_CASE("op rows: the JSON has every figure, null when absent, and the ratio") {
  OpRow a{"add  (a + b)", "f32", {4, 8}, 2};
  a.remat_ms = 1.0;
  a.pct_copy = 85.0;
  a.torch_ms = 2.0;
  a.ratio_min = 0.4, a.ratio_max = 0.625;  // --beside's rounds
  OpRow b{"sum (all)", "bf16", {4, 8}, 2};
  OpRow c{"mm (fc1 dx: g @ W)", "f32", {8, 4, 2}, 2};  // a matrix product: GFLOP/s and % peak, no % copy
  c.remat_ms = 0.5;
  c.gflops = 150.0;
  c.pct_peak = 80.0;
  const nlohmann::json doc = nlohmann::json::parse(rows_json({a, b, c}, 2, 7, 0.02, "cpu"));
  CHECK(doc["threads"] == 2);
  CHECK(doc["reps"] == 7);
  CHECK(doc["min_sample_s"] == 0.02);
  CHECK(doc["clock"] == "cpu");
  REQUIRE(doc["rows"].size() == 3);
  CHECK(doc["rows"][2]["gflops"] == 150.0);
  CHECK(doc["rows"][2]["pct_peak"] == 80.0);
  CHECK(doc["rows"][2]["pct_copy"].is_null());
  CHECK(doc["rows"][0]["gflops"].is_null());
  const nlohmann::json& r = doc["rows"][0];
  CHECK(r["op"] == "add  (a + b)");
  CHECK(r["dtype"] == "f32");
  CHECK(r["shape"] == nlohmann::json::array({4, 8}));
  CHECK(r["threads"] == 2);
  CHECK(r["remat_ms"] == 1.0);
  CHECK(r["pct_copy"] == 85.0);
  CHECK(r["torch_ms"] == 2.0);
  CHECK(r["ratio"] == 0.5);
  CHECK(r["ratio_min"] == 0.4);
  CHECK(r["ratio_max"] == 0.625);
  CHECK(r["torch_out_ms"].is_null());
  for (const char* key : {"remat_ms", "pct_copy", "gflops", "pct_peak", "torch_ms", "torch_out_ms", "ratio", "ratio_min", "ratio_max",
                          "bound_function", "bound_ms", "pct_bound"})
    CHECK(doc["rows"][1][key].is_null());
}

TEST_CASE("op rows: PyTorch's figures are read and put beside the rows they name") {
  const TorchFigures f = parse_torch_figures("torch.json", kFigures);
  CHECK(f.version == "2.15.0");
  CHECK(f.threads == 2);
  CHECK(f.clock == "wall");
  CHECK(f.source == "torch.json");
  std::vector<OpRow> rows = {{"add  (a + b)", "f32", {4, 8}, 2}, {"sum (all)", "bf16", {4, 8}, 2},
                             {"add  (a + b)", "bf16", {4, 8}, 2}};
  rows[0].remat_ms = 1.5;
  attach_torch_figures(rows, f);
  CHECK(rows[0].torch_ms == 2.0);
  CHECK(rows[0].torch_out_ms == 1.0);
  CHECK(rows[0].ratio() == 0.75);
  CHECK(rows[1].torch_ms == 0.5);
  CHECK(rows[1].torch_out_ms < 0);
  CHECK(rows[1].ratio() < 0);  // no remat figure
  CHECK(rows[2].torch_ms < 0);  // a row PyTorch's file does not have
  CHECK(compare_columns(rows[0]) == "      2.000    0.75        1.000");
  CHECK(compare_columns(rows[2]) == "        n/a     n/a          n/a");
  CHECK(compare_header() == "   torch ms   ratio torch out ms");
}

TEST_CASE("op rows: a broken figures file is refused naming the file, the row and the key") {
  CHECK_THROWS_WITH(parse_torch_figures("t.json", "[1, 2"),
                    "ops --compare t.json: not a JSON object (write it with bench/torch_ops.py --out)");
  CHECK_THROWS_WITH(parse_torch_figures("t.json", R"j({"threads": 2, "clock": "wall", "rows": []})j"),
                    "ops --compare t.json: no 'torch_version' key");
  const std::string bad = "ops --compare t.json: 'torch_version' must be a string, 'threads' an integer >= 1, 'clock' "
                          "\"wall\" or \"cpu\" and 'rows' a list";
  CHECK_THROWS_WITH(
      parse_torch_figures("t.json", R"j({"torch_version": "2", "threads": 0, "clock": "wall", "rows": []})j"), bad);
  CHECK_THROWS_WITH(
      parse_torch_figures("t.json", R"j({"torch_version": "2", "threads": 1, "clock": "sundial", "rows": []})j"), bad);
  CHECK_THROWS_WITH(parse_torch_figures("t.json", R"j({"torch_version": "2", "threads": 1, "rows": []})j"),
                    "ops --compare t.json: no 'clock' key");
  CHECK_THROWS_WITH(parse_torch_figures("t.json", figures_with_row(R"j({"op": "x", "shape": [1]})j")),
                    "ops --compare t.json: row 0 needs 'op' and 'dtype' (strings) and 'shape' (a list)");
  CHECK_THROWS_WITH(
      parse_torch_figures("t.json", figures_with_row(R"j({"op": "x", "dtype": "f32", "shape": [1.5], "torch_ms": 1})j")),
      "ops --compare t.json: row 0: 'shape' must hold integers, got [1.5]");
  CHECK_THROWS_WITH(parse_torch_figures("t.json", figures_with_row(R"j({"op": "x", "dtype": "f32", "shape": [1]})j")),
                    "ops --compare t.json: row 0 has no 'torch_ms'");
  CHECK_THROWS_WITH(parse_torch_figures("t.json", figures_with_row(
                                                      R"j({"op": "x", "dtype": "f32", "shape": [1], "torch_ms": -2,
                                                          "torch_out_ms": null})j")),
                    "ops --compare t.json: row 0: 'torch_ms' must be a number >= 0 or null, got -2");
  const std::string row = R"j({"op": "x", "dtype": "f32", "shape": [1], "torch_ms": 1, "torch_out_ms": null})j";
  CHECK_THROWS_WITH(parse_torch_figures("t.json", figures_with_row(row + ", " + row)),
                    "ops --compare t.json: row 'x' f32 appears twice");
}

TEST_CASE("op rows: figures of another thread count or shape are refused") {
  const TorchFigures f = parse_torch_figures("torch.json", kFigures);
  CHECK_NOTHROW(check_torch_timing(f, 2, "wall"));
  CHECK_THROWS_WITH(check_torch_timing(f, 2, "cpu"),
                    "ops --compare torch.json: PyTorch was timed by the wall clock, this run by the cpu clock (give "
                    "bench/torch_ops.py the rows of the same --clock)");
  CHECK_THROWS_WITH(check_torch_timing(f, 1),
                    "ops --compare torch.json: PyTorch was timed on 2 thread(s), this run has 1 (give "
                    "bench/torch_ops.py the rows of the same --threads)");
  std::vector<OpRow> rows = {{"add  (a + b)", "f32", {4096, 4096}, 2}};
  CHECK_THROWS_WITH(attach_torch_figures(rows, f),
                    "ops --compare torch.json: row 'add  (a + b)' f32 has shape [4, 8] there, [4096, 4096] in this run "
                    "(run both with or both without --quick)");
  std::vector<OpRow> one_thread = {{"add  (a + b)", "f32", {4, 8}, 1}};
  CHECK_THROWS_WITH(attach_torch_figures(one_thread, f),
                    "ops --compare torch.json: PyTorch was timed on 2 thread(s), this run has 1 (give "
                    "bench/torch_ops.py the rows of the same --threads)");
}

TEST_CASE("op rows: an output path in a missing folder is refused before the run") {
  CHECK_THROWS_WITH(check_output_file("--json", "/no-such-folder/ops.json"),
                    "--json: cannot write '/no-such-folder/ops.json' (its folder '/no-such-folder' is missing or not "
                    "writable)");
  CHECK_THROWS_AS(check_output_file("--json", "/no-such-folder/ops.json"), UsageError);
  CHECK_NOTHROW(check_output_file("--json", "ops.json"));
  CHECK(shape_text({2, 3}) == "[2, 3]");
}

TEST_CASE("op rows: --beside's requests name how to time and the row; its answers are read and checked") {
  const auto session = nlohmann::json::parse(torch_session_request(2, 7, 0.02, "cpu"));
  CHECK(session == nlohmann::json{{"threads", 2}, {"reps", 7}, {"min_sample_s", 0.02}, {"clock", "cpu"}});
  const TorchFigures f =
      parse_torch_session("py", R"({"torch_version": "2.15.0", "threads": 2, "clock": "cpu", "x": 1})", 2, "cpu");
  CHECK(f.version == "2.15.0");
  CHECK(f.source == "py");
  CHECK(f.rows.empty());

  const OpRow row{"sum (all)", "bf16", {4, 8}, 2};
  CHECK(nlohmann::json::parse(torch_row_request(row)) ==
        nlohmann::json{{"op", "sum (all)"}, {"dtype", "bf16"}, {"shape", {4, 8}}});
  const auto fig = parse_torch_row_answer("py", row, R"({"torch_ms": 0.5, "torch_out_ms": null})");
  CHECK(fig.ms == 0.5);
  CHECK(fig.out_ms < 0);
  CHECK(fig.shape == row.shape);
  CHECK(parse_torch_row_answer("py", row, R"({"torch_ms": 0.5, "torch_out_ms": 0.25})").out_ms == 0.25);
}

TEST_CASE("op rows: a broken --beside answer is refused naming the command, the row and the key") {
  auto session_error = [](const std::string& answer, int threads = 2) {
    try {
      parse_torch_session("py", answer, threads, "wall");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(session_error("[1]") == "ops --beside py: its first answer is not a JSON object: [1] (run bench/torch_ops.py --serve)");
  CHECK(session_error(R"({"error": "bad reps"})") == "ops --beside py: bad reps");
  CHECK(session_error(R"({"error": 3})") == "ops --beside py: 3");
  CHECK(session_error(R"({"torch_version": 2, "threads": 2, "clock": "wall"})") ==
        "ops --beside py: its first answer needs 'torch_version' (a string), 'threads' (an integer >= 1) and 'clock' "
        "(\"wall\" or \"cpu\"), got {\"torch_version\": 2, \"threads\": 2, \"clock\": \"wall\"}");
  CHECK(session_error(R"({"torch_version": "t", "threads": 2, "clock": "cpu"})") ==
        "ops --beside py: it times on 2 thread(s) by the cpu clock, asked for 2 by the wall clock");
  CHECK(session_error(R"({"torch_version": "t", "threads": 2, "clock": "wall"})", 1) ==
        "ops --beside py: it times on 2 thread(s) by the wall clock, asked for 1 by the wall clock");

  const OpRow row{"gelu", "f32", {4}, 1};
  auto row_error = [&](const std::string& answer) {
    try {
      parse_torch_row_answer("py", row, answer);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(row_error("nope") == "ops --beside py: its answer for row 'gelu' f32 is not a JSON object: nope");
  CHECK(row_error(R"({"error": "no PyTorch form"})") == "ops --beside py: row 'gelu' f32: no PyTorch form");
  CHECK(row_error(R"({"torch_out_ms": null})") == "ops --beside py: row 'gelu' f32 has no 'torch_ms'");
  CHECK(row_error(R"({"torch_ms": "1", "torch_out_ms": null})") ==
        "ops --beside py: row 'gelu' f32: 'torch_ms' must be a number >= 0 or null, got \"1\"");
  CHECK(row_error(R"({"torch_ms": null, "torch_out_ms": null})") ==
        "ops --beside py: row 'gelu' f32: 'torch_ms' must be a number > 0, got {\"torch_ms\": null, \"torch_out_ms\": "
        "null}");
  CHECK(row_error(R"({"torch_ms": 0, "torch_out_ms": null})") ==
        "ops --beside py: row 'gelu' f32: 'torch_ms' must be a number > 0, got {\"torch_ms\": 0, \"torch_out_ms\": null}");
}
