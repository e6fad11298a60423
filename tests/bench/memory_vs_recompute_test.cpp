// Tests bench/memory_vs_recompute.cpp's main (no PyTorch counterpart): bad numbers, missing or
// unreadable paths (a FIFO used to hang --compare), a full disk, a diverging run and an earlier
// run's results.json: each refused or reported with one line and the exit status of its kind;
// --sweep N --export-plan DIR and --compare of PyTorch's runs of those plans, a row per budget.
#include <catch2/catch.hpp>

#include <algorithm>
#include <dirent.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>

#include "tests/tools/tool_runner.h"

using remat::testing::read_text;
using remat::testing::run_binary;
using remat::testing::test_dir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A model small enough to train in a moment.
const std::string kTiny =
    "--layers 1 --embd 16 --heads 1 --seq 8 --batch 1 --vocab 8 --steps 2 --warmup 0 --strategies none "
    "--no-interleave ";

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("memory_vs_recompute refuses bad numbers with one line naming the flag and the value, exit 2",
          "[bench][cli]") {
  struct Case {
    const char* args;
    const char* error;
  };
  const Case cases[] = {
      {"--lr abc", "--lr: expected a finite number > 0 and <= 1e6, got 'abc'"},
      {"--lr inf", "--lr: expected a finite number > 0 and <= 1e6, got 'inf'"},
      {"--lr 0", "--lr: expected a finite number > 0 and <= 1e6, got '0'"},
      {"--lr 1e30", "--lr: expected a finite number > 0 and <= 1e6, got '1e30'"},
      {"--budget 1e30", "--budget: the size must be below 8 EiB (int64 bytes), got '1e30'"},
      {"--budget inf", "--budget: expected a size like 40MiB, 1.5GiB, 800KB or 65536, got 'inf'"},
      {"--budget 0.4", "--budget: the size must be at least 1 byte, got '0.4'"},
      {"--budget '40 MiB'", "--budget: expected a size like 40MiB, 1.5GiB, 800KB or 65536, got '40 MiB'"},
      {"--offload 1e30 --device cuda --dry-run --sweep 2",
       "--offload: the size must be below 8 EiB (int64 bytes), got '1e30'"},
      {"--embd 99999999999999999999", "--embd: expected an integer >= 1, got '99999999999999999999'"},
      {"--steps 1x", "--steps: expected an integer >= 1, got '1x'"},
      {"--warmup -1", "--warmup: expected an integer >= 0, got '-1'"},
      {"--sweep 0", "--sweep expects an integer >= 1 (how many budgets to plan), got '0'"},
      // A name the run does not know: bad usage, before anything runs (it used to exit 1).
      {"--strategies none,bogus",
       "--strategies: unknown strategy 'bogus'; known: none, full, full-reentrant, every2, sac-mm, sac-titan, "
       "sac-no-fc2, sac-megatron"},
      {"--strategies ,", "--strategies: no strategy selected"},
      {"--dtype f16", "--dtype must be f32 or bf16, got 'f16'"},
      {"--device tpu", "--device must be cpu or cuda, got 'tpu'"},
      {"--clock sundial", "--clock must be wall or cpu, got 'sundial'"},
      {"--layers", "missing value for --layers"},
      {"--bogus 1", "unknown flag --bogus"},
      // An impossible model: refused before anything runs, naming the figure that overflowed.
      {"--dry-run --embd 4000000000 --heads 1",
       "the model is too large to count in bytes: L*12*C*C (the blocks' parameters): 4 * 12 * 4000000000 * 4000000000 "
       "overflows int64"},
      {"--dry-run --model llama --embd 4000000000 --heads 2 --ffn 8",
       "the model is too large to count in bytes: C * kv_heads * C/H: 4000000000 * 2 * 2000000000 overflows int64"},
      {"--model bert", "--model must be gpt or llama, got 'bert'"},
      {"--dry-run --profile-ops", "--profile-ops times the ops run; it cannot go with --dry-run"},
      {"--dry-run --beside true", "--beside times PyTorch's steps beside remat's; it cannot go with --dry-run"},
      {"--no-interleave --beside true",
       "--beside takes PyTorch's steps in the timing in turn; it cannot go with --no-interleave"},
      {"--beside ' '", "--beside needs a command, got ' '"},
      {"--config llama3_70b", "--config must be debugmodel or llama3_8b (torchtitan's Llama 3 flavours), got 'llama3_70b'"},
      {"--kv-heads 2", "--kv-heads and --ffn are the Llama's (--model llama)"},
      {"--model llama --heads 4 --kv-heads 3", "--heads must be divisible by --kv-heads (grouped-query attention), got 4 and 3"},
      {"--model llama --embd 12 --heads 4", "the Llama's head size (--embd / --heads) must be even for its rotary "
       "embeddings, got 3"},
      {"--model llama --strategies sac-no-fc2", "--strategies: unknown strategy 'sac-no-fc2'; known: none, full, "
       "full-reentrant, every2, sac-mm, sac-titan, sac-no-w2, sac-megatron"},
      {"--dry-run --seq 4000000000 --batch 4000000000",
       "the model is too large to count in bytes: A = B*T*C*e (one [B, T, C] activation): 4000000000 * 4000000000 * "
       "256 * 4 overflows int64"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const auto r = run_binary("bench/memory_vs_recompute", c.args, 30);
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + std::string(c.error) + " (--help for the flags)\n");
    CHECK(r.out.empty());
  }
}

TEST_CASE("memory_vs_recompute checks --compare and --out before the run: missing, a folder, a FIFO, unreadable JSON",
          "[bench][cli]") {
  const std::string dir = test_dir();
  const std::string fifo = dir + "/results.fifo";
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string file = dir + "/a_file";
  std::ofstream(file) << "x";
  // What a diverged run used to write (a NaN loss became null), and a file that is not results.json.
  const std::string null_loss = dir + "/null_loss.json", no_config = dir + "/no_config.json";
  std::ofstream(null_loss) << R"({"config": {"batch": 1, "seq": 8, "embd": 16, "heads": 1, "vocab": 8, "layers": 1},
    "results": [{"strategy": "none", "peak_bytes": 1, "final_loss": null}]})";
  std::ofstream(no_config) << R"({"results": []})";
  struct Case {
    std::string args, error;
  };
  const Case cases[] = {
      {"--compare " + fifo, "--compare: '" + fifo + "' is not a regular file (a folder, FIFO or device)"},
      {"--compare " + dir, "--compare: '" + dir + "' is not a regular file (a folder, FIFO or device)"},
      {"--compare " + dir + "/missing.json", "--compare: cannot read '" + dir + "/missing.json': No such file or directory"},
      {"--out " + file, "--out: '" + file + "' is not a folder"},
      {"--compare " + null_loss, "--compare '" + null_loss +
                                     "': results.json: cannot read it: [json.exception.type_error.302] type must be "
                                     "number, but is null"},
      {"--compare " + no_config, "--compare '" + no_config +
                                     "': results.json: cannot read it: [json.exception.out_of_range.403] key 'config' "
                                     "not found"},
      {"--out " + dir + "/no/such/dir", "--out: cannot create the folder '" + dir + "/no/such/dir': No such file or directory"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const auto r = run_binary("bench/memory_vs_recompute", kTiny + c.args, 30);
    CHECK(r.status == 2);  // at once: a FIFO is never opened
    CHECK(r.err == "error: " + c.error + " (--help for the flags)\n");
  }
}

TEST_CASE("memory_vs_recompute: a diverging run stops naming the step, exit 1, and leaves no results.json",
          "[bench][cli]") {
  const std::string out = test_dir() + "/diverged";
  ::mkdir(out.c_str(), 0755);
  std::ofstream(out + "/results.json") << "{\"an earlier run\": true}";
  const auto r = run_binary("bench/memory_vs_recompute", kTiny + "--steps 6 --lr 1e6 --out " + out, 120);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("error: none: the loss became ") && Contains("nan at step ") &&
                        Contains(" (the run diverged; try a smaller --lr)"));
  CHECK_FALSE(exists(out + "/results.json"));  // the earlier run's file is gone, no new one written
}

TEST_CASE("memory_vs_recompute: a full disk for stdout is a failed run, exit 1", "[bench][cli]") {
  const auto r = run_binary("bench/memory_vs_recompute", kTiny + "--dry-run", 60, "/dev/full");
  CHECK(r.status == 1);
  CHECK(r.err == "error: cannot write standard output: No space left on device\n");
}

TEST_CASE("memory_vs_recompute writes results.json that --compare reads back, replacing an earlier one",
          "[bench][cli]") {
  const std::string out = test_dir() + "/run";
  ::mkdir(out.c_str(), 0755);
  std::ofstream(out + "/results.json") << "an earlier run's file";
  std::ofstream(out + "/timeline_sac-mm.svg") << "an earlier run's strategy";
  const auto r = run_binary("bench/memory_vs_recompute", kTiny + "--out " + out, 120);
  REQUIRE(r.status == 0);
  CHECK_THAT(read_text(out + "/results.json"), StartsWith("{"));
  CHECK_FALSE(exists(out + "/timeline_sac-mm.svg"));  // not this run's: removed
  const auto again = run_binary("bench/memory_vs_recompute", kTiny + "--compare " + out + "/results.json", 120);
  CHECK(again.status == 0);
}

TEST_CASE("memory_vs_recompute --profile-ops: each strategy's ops per timed step, the warm-up not counted",
          "[bench][cli]") {
  const auto r = run_binary("bench/memory_vs_recompute",
                            "--layers 1 --embd 16 --heads 1 --seq 8 --batch 1 --vocab 8 --steps 2 --warmup 1 "
                            "--strategies none,full --no-interleave --no-timeline --profile-ops", 120);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("none: its ops per timed step (2 steps") && Contains("full: its ops per timed step"));
  // the GPT's linears run addmm (the biased ones) in forward
  CHECK_THAT(r.out, Contains("aten::addmm") && Contains("total"));
}

TEST_CASE("memory_vs_recompute --model llama: every strategy measured beside its dry run, and a results.json that "
          "names the model", "[bench][cli]") {
  const std::string out = test_dir() + "/llama";
  ::mkdir(out.c_str(), 0755);
  const auto r = run_binary("bench/memory_vs_recompute",
                            "--model llama --layers 1 --embd 16 --heads 4 --kv-heads 2 --seq 8 --batch 1 --vocab 8 "
                            "--steps 2 --warmup 0 --no-interleave --no-timeline --out " + out, 120);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("Llama: 1 layers, d_model 16, 4 heads (2 kv), ffn 256, seq 8") && Contains("sac-no-w2") &&
                        Contains("sac-titan"));
  const std::string json = read_text(out + "/results.json");
  CHECK_THAT(json, Contains("\"model\": \"llama\"") && Contains("\"kv_heads\": 2") && Contains("\"ffn_hidden\": 256"));
}

TEST_CASE("memory_vs_recompute --config llama3_8b: torchtitan's flavour, later flags overriding its sizes",
          "[bench][cli]") {
  const auto r = run_binary("bench/memory_vs_recompute",
                            "--dry-run --config llama3_8b --layers 1 --seq 16 --batch 1 --vocab 64 --strategies full "
                            "--dtype bf16", 120);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("Llama: 1 layers, d_model 4096, 32 heads (8 kv), ffn 14336, seq 16, batch 1, vocab 64, bf16"));
}

namespace {

// The line of `text` that starts with `prefix` ("" if none).
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

}  // namespace

TEST_CASE("memory_vs_recompute --sweep N --export-plan DIR: a plan file per budget; --compare: a row per budget "
          "beside PyTorch's run of its plan", "[bench][cli]") {
  const std::string dir = test_dir() + "/sweep_plans";
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/plan_1.json") << "an earlier sweep's plan";
  // Two blocks: a peak that recomputing lowers (two budgets).
  const std::string sweep = kTiny + "--layers 2 --heads 2 --batch 2 --vocab 11 --sweep 2 --estimate cost-model ";
  const auto r = run_binary("bench/memory_vs_recompute", sweep + "--export-plan " + dir, 120);
  REQUIRE(r.status == 0);
  std::vector<nlohmann::json> plans;
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    plans.push_back(nlohmann::json::parse(read_text(dir + "/" + name)));
    CHECK(name == "plan_" + std::to_string(plans.back()["budget_bytes"].get<int64_t>()) + ".json");
  }
  closedir(d);
  REQUIRE(plans.size() == 2);  // the earlier plan_1.json removed
  std::sort(plans.begin(), plans.end(), [](const auto& a, const auto& b) { return a["budget_bytes"] < b["budget_bytes"]; });
  const int64_t lo = plans[0]["budget_bytes"], hi = plans[1]["budget_bytes"];
  CHECK_THAT(r.out, Contains("to " + dir + "/plan_" + std::to_string(lo) + ".json"));

  // What torch_reference.py --plan DIR writes: a row for the highest budget and one for a budget of
  // no sweep.
  const nlohmann::json predicted = plans[1]["predicted"];
  const nlohmann::json torch = {
      {"framework", "pytorch test"},
      {"config", {{"batch", 2}, {"seq", 8}, {"embd", 16}, {"heads", 2}, {"vocab", 11}, {"layers", 2}}},
      {"results",
       {{{"strategy", "plan@" + std::to_string(hi)}, {"budget_bytes", hi}, {"activation_bytes", 4242},
         {"median_ms", 1.5}, {"final_loss", 2.0}, {"predicted_activation_bytes", predicted["activation_bytes"]},
         {"predicted_peak_bytes", predicted["peak_bytes"]}},
        {{"strategy", "plan@7"}, {"budget_bytes", 7}, {"activation_bytes", 1}, {"median_ms", 1.0},
         {"final_loss", 2.0}, {"predicted_activation_bytes", 1}, {"predicted_peak_bytes", 1}}}}};
  const std::string torch_json = test_dir() + "/torch_plans.json";  // outside DIR: not a plan
  std::ofstream(torch_json) << torch.dump();
  // remat under the very plans PyTorch ran (--plan DIR), not planned again
  const auto c = run_binary("bench/memory_vs_recompute", sweep + "--plan " + dir + " --compare " + torch_json, 120);
  REQUIRE(c.status == 0);
  CHECK_THAT(c.out, Contains("remat (f32) and pytorch test (f32) under the same plan, a row per sweep budget:"));
  CHECK_THAT(line_starting(c.out, std::to_string(lo) + " "), Contains(" not run "));
  const std::string row = line_starting(c.out, std::to_string(hi) + " ");
  CHECK_THAT(row, Contains(" " + std::to_string(predicted["activation_bytes"].get<int64_t>()) + " ") &&
                      Contains(" 4242 ") && Contains(" 1.5 ") && Contains(" same"));
  CHECK_THAT(c.out, Contains("PyTorch's row plan@7 ran a plan for 7 bytes, which is not a budget of this sweep: not "
                             "compared"));

  const auto bad = run_binary("bench/memory_vs_recompute", kTiny + "--sweep-at-strategies --export-plan " + dir, 30);
  CHECK(bad.status == 2);
  CHECK(bad.err == "error: --export-plan " + dir + " with --sweep-at-strategies alone: it writes the plan of --budget "
                   "SIZE (a file) or one plan per budget of --sweep N (a folder); give --budget or --sweep too (--help "
                   "for the flags)\n");
}

TEST_CASE("memory_vs_recompute --beside: a peer's step of each strategy right after remat's, its median and the ratio "
          "in the table and results.json; a peer's error ends the run with its line",
          "[bench][cli]") {
  // A stand-in for bench/torch_reference.py --serve (no PyTorch in this test): it answers the session
  // with the threads it was asked for, then every step with 2.5 ms.
  const std::string peer = test_dir() + "/fake_peer.sh";
  {
    std::ofstream f(peer);
    f << "read request\n"
         "threads=$(printf '%s' \"$request\" | sed 's/.*\"--threads\",\"\\([0-9]*\\)\".*/\\1/')\n"
         "printf '{\"framework\": \"fake 1.0\", \"strategies\": [\"none\", \"full\"], \"threads\": %s, "
         "\"clock\": \"wall\"}\\n' \"$threads\"\n"
         "while read line; do echo '{\"ms\": 2.5, \"loss\": 1.0}'; done\n";
  }
  const std::string tiny = "--layers 1 --embd 16 --heads 1 --seq 8 --batch 1 --vocab 8 --steps 3 --warmup 1 "
                           "--no-timeline --strategies none,full ";
  const std::string out = test_dir() + "/beside_out";
  const auto r = run_binary("bench/memory_vs_recompute", tiny + "--out " + out + " --beside 'sh " + peer + "'", 120);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("PyTorch ms in turn  ratio  PyTorch overhead") &&
                        Contains("PyTorch beside: fake 1.0 (--beside sh " + peer + ")"));
  const auto doc = nlohmann::json::parse(read_text(out + "/results.json"));
  for (const auto& row : doc["results"]) CHECK(row["beside_ms"] == 2.5);

  // Peers that read the session's line, then answer once: each one reads first, so that this run's
  // request never meets a closed pipe.
  auto answering = [&](const std::string& name, const std::string& answer) {
    const std::string path = test_dir() + "/" + name + ".sh";
    std::ofstream(path) << "read request\necho '" << answer << "'\n";
    return run_binary("bench/memory_vs_recompute", tiny + "--beside 'sh " + path + "'", 120);
  };
  // the peer's own refusal, named: exit 1, one line
  const auto refused = answering("refusing_peer", R"({"error": "strategy full: not here"})");
  CHECK(refused.status == 1);
  CHECK_THAT(refused.err, StartsWith("error: memory_vs_recompute --beside sh ") &&
                              Contains("refusing_peer.sh: strategy full: not here"));
  CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
  // a peer that answers something else than its session
  const auto other = answering("other_peer", R"({"rows": []})");
  CHECK(other.status == 1);
  CHECK_THAT(other.err, Contains("its first answer needs 'framework' (a string), 'strategies' (a list)"));
  // a peer that ends after its session: the step's request names this program and its flag
  const std::string ending = test_dir() + "/ending_peer.sh";
  {
    std::ofstream f(ending);
    f << "read request\n"
         "threads=$(printf '%s' \"$request\" | sed 's/.*\"--threads\",\"\\([0-9]*\\)\".*/\\1/')\n"
         "printf '{\"framework\": \"fake\", \"strategies\": [\"none\", \"full\"], \"threads\": %s, "
         "\"clock\": \"wall\"}\\n' \"$threads\"\n";
  }
  const auto ended = run_binary("bench/memory_vs_recompute", tiny + "--beside 'sh " + ending + "'", 120);
  CHECK(ended.status == 1);
  CHECK_THAT(ended.err, StartsWith("error: memory_vs_recompute --beside sh " + ending + ": ") &&
                            Contains("(it exited with status 0)"));
}
