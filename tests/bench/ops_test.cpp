// Tests bench/ops.cpp's main (no PyTorch counterpart): bad flags are refused with one line naming
// the flag and the value, exit 2, at once (a huge --threads used to hang starting threads); the
// rows listed for bench/torch_ops.py and PyTorch's figures put beside remat's (--compare, --json).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/tools/tool_runner.h"

using remat::testing::read_text;
using remat::testing::run_binary;
using remat::testing::test_dir;
using Catch::Matchers::Contains;

#define USAGE                                                                                                    \
  " (usage: ops [--quick] [--threads N] [--clock wall|cpu] [--only TEXT] [--list-rows] [--compare FILE | --beside " \
  "COMMAND [--rounds N]] [--json FILE])\n"

TEST_CASE("bench/ops refuses bad numbers and flags with one line, exit 2", "[bench][cli]") {
  struct Case {
    const char* args;
    const char* error;
  };
  const Case cases[] = {
      {"--threads 99999999999", "error: --threads: expected an integer from 1 to 4096, got '99999999999'\n"},
      {"--threads 0", "error: --threads: expected an integer from 1 to 4096, got '0'\n"},
      {"--threads 4x", "error: --threads: expected an integer from 1 to 4096, got '4x'\n"},
      {"--threads ''", "error: --threads: expected an integer from 1 to 4096, got ''\n"},
      {"--threads", "error: missing value for --threads" USAGE},
      {"--clock sundial", "error: --clock must be wall or cpu, got 'sundial'" USAGE},
      {"--fast", "error: unknown flag '--fast'" USAGE},
      {"--compare", "error: missing value for --compare" USAGE},
      {"--json", "error: missing value for --json" USAGE},
      {"--list-rows --json x.json", "error: --list-rows times nothing: it takes neither --compare, --beside nor --json" USAGE},
      {"--list-rows --compare x.json",
       "error: --list-rows times nothing: it takes neither --compare, --beside nor --json" USAGE},
      {"--list-rows --beside cat", "error: --list-rows times nothing: it takes neither --compare, --beside nor --json" USAGE},
      {"--beside", "error: missing value for --beside" USAGE},
      {"--beside ' '", "error: --beside needs a command, got ' '" USAGE},
      {"--compare x.json --beside cat",
       "error: --compare reads PyTorch's figures from a file, --beside asks a running PyTorch: give one" USAGE},
      {"--rounds 3", "error: --rounds counts the rounds of --beside: give --beside too" USAGE},
      {"--rounds 0 --beside cat", "error: --rounds: expected an integer from 1 to 99, got '0'\n"},
      {"--only ''", "error: --only needs some text of a row's op name" USAGE},
      {"--quick --only 'no such op'", "error: --only 'no such op': no row's op name holds it" USAGE},
      {"--compare no-such.json", "error: --compare: cannot read 'no-such.json': No such file or directory\n"},
      {"--json /no-such-folder/o.json",
       "error: --json: cannot write '/no-such-folder/o.json' (its folder '/no-such-folder' is missing or not "
       "writable)\n"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const auto r = run_binary("bench/ops", c.args, 30);
    CHECK(r.status == 2);
    CHECK(r.err == c.error);
    CHECK(r.out.empty());
  }
}

TEST_CASE("bench/ops --help prints the flags, exit 0", "[bench][cli]") {
  const auto r = run_binary("bench/ops", "--help", 30);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("--threads N (1 to 4096)"));
  CHECK_THAT(r.out, Contains("--compare FILE"));
}

TEST_CASE("bench/ops --compare refuses PyTorch's figures of another thread count or clock before the run, exit 1",
          "[bench][cli]") {
  std::ofstream(test_dir() + "/torch3.json") << R"({"torch_version": "2.15.0", "threads": 3, "clock": "wall", "rows": []})";
  const auto r = run_binary("bench/ops", "--quick --threads 1 --compare torch3.json", 30);
  CHECK(r.status == 1);
  CHECK(r.err ==
        "error: ops --compare torch3.json: PyTorch was timed on 3 thread(s), this run has 1 (give bench/torch_ops.py "
        "the rows of the same --threads)\n");
  CHECK(r.out.empty());
  std::ofstream(test_dir() + "/torch_wall.json") << R"({"torch_version": "2.15.0", "threads": 1, "clock": "wall", "rows": []})";
  const auto cpu = run_binary("bench/ops", "--quick --threads 1 --clock cpu --compare torch_wall.json", 30);
  CHECK(cpu.status == 1);
  CHECK(cpu.err == "error: ops --compare torch_wall.json: PyTorch was timed by the wall clock, this run by the cpu clock "
                   "(give bench/torch_ops.py the rows of the same --clock)\n");
}

TEST_CASE("bench/ops --list-rows, then --compare and --json: every row with remat's and PyTorch's figures",
          "[bench][cli]") {
  const auto listed = run_binary("bench/ops", "--quick --threads 1 --list-rows", 120);
  REQUIRE(listed.status == 0);
  const nlohmann::json rows = nlohmann::json::parse(listed.out);
  CHECK(rows["threads"] == 1);
  CHECK(rows["reps"].get<int>() >= 1);
  CHECK(rows["min_sample_s"].get<double>() > 0);
  CHECK(rows["clock"] == "wall");
  std::set<std::pair<std::string, std::string>> keys;
  nlohmann::json torch_rows = nlohmann::json::array();
  for (const auto& row : rows["rows"]) {
    CHECK(row["remat_ms"].is_null());  // nothing is timed
    CHECK(row["threads"] == 1);
    const bool new_key = keys.insert({row["op"].get<std::string>(), row["dtype"].get<std::string>()}).second;
    CHECK(new_key);  // (op, dtype) names one row
    torch_rows.push_back({{"op", row["op"]}, {"dtype", row["dtype"]}, {"shape", row["shape"]}, {"torch_ms", 1000.0},
                          {"torch_out_ms", nullptr}});
  }
  for (const char* dtype : {"f32", "bf16"}) {
    CHECK(keys.count({"_fused_adamw_ (one parameter)", dtype}) == 1);
    CHECK(keys.count({"sum (all)", dtype}) == 1);
    CHECK(keys.count({"gelu (tanh)", dtype}) == 1);
    CHECK(keys.count({"addmm (fc1: b + x @ W^T)", dtype}) == 1);  // the step's matrix products too
    CHECK(keys.count({"bmm (scores: q @ k^T)", dtype}) == 1);
  }

  // PyTorch's figures as bench/torch_ops.py writes them (every row: 1000 ms, so every ratio < 1).
  const nlohmann::json torch = {{"torch_version", "test"}, {"threads", 1}, {"clock", "wall"}, {"rows", torch_rows}};
  std::ofstream(test_dir() + "/torch.json") << torch.dump();
  const auto run = run_binary("bench/ops", "--quick --threads 1 --compare torch.json --json ops.json", 300);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Contains("torch ms   ratio torch out ms"));
  CHECK_THAT(run.out, Contains("PyTorch test (torch.json)"));
  CHECK_THAT(run.out, Contains("n/a where the op has no such form"));
  const nlohmann::json out = nlohmann::json::parse(read_text(test_dir() + "/ops.json"));
  CHECK(out["threads"] == 1);
  REQUIRE(out["rows"].size() == rows["rows"].size());
  std::set<std::string> bounded;
  for (const auto& row : out["rows"]) {
    INFO(row.dump());
    CHECK(row["remat_ms"].get<double>() > 0);
    const std::string op = row["op"].get<std::string>();
    if (op.rfind("mm (", 0) == 0 || op.rfind("addmm (", 0) == 0 || op.rfind("bmm (", 0) == 0 ||
        op.rfind("matmul (", 0) == 0) {
      // a matrix product: GFLOP/s and (f32, where the FMA peak was measured) % of that peak, no % copy
      CHECK(row["pct_copy"].is_null());
      CHECK(row["gflops"].get<double>() > 0);
      if (row["dtype"] == "bf16") CHECK(row["pct_peak"].is_null());
      else if (!row["pct_peak"].is_null()) CHECK(row["pct_peak"].get<double>() > 0);
    } else {
      CHECK(row["pct_copy"].get<double>() > 0);
      CHECK(row["gflops"].is_null());
      CHECK(row["pct_peak"].is_null());
    }
    CHECK(row["torch_ms"] == 1000.0);
    CHECK(row["torch_out_ms"].is_null());
    CHECK(row["ratio"].get<double>() == Approx(row["remat_ms"].get<double>() / 1000.0));
    CHECK(row["bound_ms"].is_null() == row["bound_function"].is_null());
    if (row["bound_function"].is_null()) continue;
    CHECK(row["bound_ms"].get<double>() > 0);
    CHECK(row["pct_bound"].get<double>() == Approx(100.0 * row["bound_ms"].get<double>() / row["remat_ms"].get<double>()));
    bounded.insert(row["op"].get<std::string>() + ": " + row["bound_function"].get<std::string>());
  }
  // bench/op_bounds.cpp names these rows: each name is a row of `ops`, in f32 and bf16
  CHECK(bounded == std::set<std::string>{"gelu: erf", "gelu (tanh): exp16", "gelu_backward (tanh): exp16",
                                         "silu: exp", "silu_backward: exp16",
                                         "softmax(dim=-1) fwd: exp16", "softmax(dim=-1) fwd+bwd: exp16",
                                         "softmax(dim=-1) of masked scores: exp16",
                                         "_masked_softmax (causal [L, S] mask): exp16", "cross_entropy fwd: exp16",
                                         "cross_entropy fwd+bwd: exp16", "native_dropout (p=0.1): philox"});
  CHECK_THAT(run.out, Contains("philox (remat's vectorised, L1-resident, 1 thread(s) at once)"));
  CHECK_THAT(run.out, Contains("ops bound by arithmetic"));
  CHECK_THAT(run.out, Contains("% bound   torch %"));
}

// A stand-in for `bench/torch_ops.py --serve` (no PyTorch in this test): answers the session line
// with `session`, then every row with `row`.
std::string fake_peer(const std::string& name, const std::string& session, const std::string& row) {
  std::ofstream(test_dir() + "/" + name) << "read line\necho '" << session << "'\nwhile read line; do echo '" << row
                                         << "'; done\n";
  return "--beside 'sh " + name + "'";
}

TEST_CASE("bench/ops --beside --only: each row timed in turn with the peer's, the rounds' medians and range",
          "[bench][cli]") {
  const std::string beside = fake_peer("peer.sh", R"({"torch_version": "fake", "threads": 1, "clock": "wall"})",
                                       R"({"torch_ms": 1000.0, "torch_out_ms": null})");
  const auto run = run_binary("bench/ops", "--quick --threads 1 --only 'sum (all)' --rounds 2 " + beside + " --json o.json", 120);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Contains("rounds' range"));
  CHECK_THAT(run.out, Contains("PyTorch fake (--beside sh peer.sh): each row timed 2 time(s) in turn"));
  CHECK_THAT(run.out, !Contains("mm, f32, square"));  // --only: no GEMM tables
  const nlohmann::json out = nlohmann::json::parse(read_text(test_dir() + "/o.json"));
  REQUIRE(out["rows"].size() == 2);  // f32 and bf16
  for (const auto& row : out["rows"]) {
    INFO(row.dump());
    CHECK(row["op"] == "sum (all)");
    CHECK(row["torch_ms"] == 1000.0);
    CHECK(row["torch_out_ms"].is_null());
    CHECK(row["ratio_min"].get<double>() > 0);
    CHECK(row["ratio_min"].get<double>() <= row["ratio_max"].get<double>());
    CHECK(row["ratio_max"].get<double>() < 1);
  }
  // --only with --list-rows lists those rows alone
  const auto listed = run_binary("bench/ops", "--quick --threads 1 --only gelu --list-rows", 120);
  REQUIRE(listed.status == 0);
  const nlohmann::json listing = nlohmann::json::parse(listed.out);
  std::set<std::string> ops;
  for (const auto& row : listing["rows"]) ops.insert(row["op"].get<std::string>());
  CHECK(ops == std::set<std::string>{"gelu", "gelu (tanh)", "gelu_backward (tanh)"});
}

TEST_CASE("bench/ops --beside: a peer that fails, answers an error or another setting is refused in one line, exit 1",
          "[bench][cli]") {
  struct Case {
    std::string beside;
    std::string error;
    std::string or_error = "";  // the other message where the peer's end races our first write
  };
  const Case cases[] = {
      // it may exit before the first line is written (the write fails: EPIPE) or after
      {"--beside 'exit 3'",
       "error: ops --beside exit 3: it answered no line to "
       R"({"clock":"wall","min_sample_s":0.002,"reps":3,"threads":1})"
       " (it exited with status 3)\n",
       "error: ops --beside exit 3: could not write to it (it exited with status 3)\n"},
      {fake_peer("err.sh", R"({"error": "no torch here"})", "{}"), "error: ops --beside sh err.sh: no torch here\n"},
      {fake_peer("threads.sh", R"({"torch_version": "fake", "threads": 2, "clock": "wall"})", "{}"),
       "error: ops --beside sh threads.sh: it times on 2 thread(s) by the wall clock, asked for 1 by the wall clock\n"},
      {fake_peer("junk.sh", "hello", "{}"),
       "error: ops --beside sh junk.sh: its first answer is not a JSON object: hello (run bench/torch_ops.py --serve)\n"},
      {fake_peer("rowerr.sh", R"({"torch_version": "fake", "threads": 1, "clock": "wall"})",
                 R"({"error": "no PyTorch form for the row"})"),
       "error: ops --beside sh rowerr.sh: row 'sum (all)' f32: no PyTorch form for the row\n"},
      {fake_peer("neg.sh", R"({"torch_version": "fake", "threads": 1, "clock": "wall"})", R"({"torch_ms": -1, "torch_out_ms": null})"),
       "error: ops --beside sh neg.sh: row 'sum (all)' f32: 'torch_ms' must be a number >= 0 or null, got -1\n"},
      {fake_peer("quit.sh", R"({"torch_version": "fake", "threads": 1, "clock": "wall"})", "x'; exit 4; echo '"),
       "error: ops --beside sh quit.sh: its answer for row 'sum (all)' f32 is not a JSON object: x\n"},
  };
  for (const Case& c : cases) {
    INFO(c.beside);
    const auto r = run_binary("bench/ops", "--quick --threads 1 --only 'sum (all)' " + c.beside, 60);
    CHECK(r.status == 1);
    INFO(r.err);
    CHECK((r.err == c.error || (!c.or_error.empty() && r.err == c.or_error)));
  }
}

TEST_CASE("bench/ops: a full disk for stdout is a failed run, one line, exit 1", "[bench][cli]") {
  const auto r = run_binary("bench/ops", "--help", 30, "/dev/full");
  CHECK(r.status == 1);
  CHECK(r.err == "error: cannot write standard output: No space left on device\n");
}
