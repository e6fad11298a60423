// Tests bench/step_peer.cpp (no PyTorch counterpart): the flags the peer is given for the same run,
// and every malformed or refused answer turned into one remat::Error naming the command.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "bench/planning.h"
#include "bench/step_peer.h"
#include "remat.h"

using remat::Error;
using remat::bench::parse_step_answer;
using remat::bench::parse_step_session;
using remat::bench::step_peer_args;
using remat::bench::step_request;
using remat::bench::step_session_request;
using remat::bench::StepPeerConfig;
using Catch::Matchers::Contains;

namespace {

StepPeerConfig gpt() {
  StepPeerConfig c;
  c.shape = {8, 128, 256, 4, 65, 4};  // batch, seq, embd, heads, vocab, layers
  c.dtype = "bf16";
  c.clock = "cpu";
  c.threads = 2;
  c.lr = 3e-4;
  c.strategies = {"none", "sac-mm"};
  return c;
}

// The value after `flag` in args, or "" when the flag is absent.
std::string value_of(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
}

}  // namespace

TEST_CASE("step_peer_args gives bench/torch_reference.py every size of the run, the Llama's flavour too", "[bench]") {
  const auto args = step_peer_args(gpt());
  CHECK(value_of(args, "--model") == "gpt");
  CHECK(value_of(args, "--layers") == "4");
  CHECK(value_of(args, "--embd") == "256");
  CHECK(value_of(args, "--heads") == "4");
  CHECK(value_of(args, "--seq") == "128");
  CHECK(value_of(args, "--batch") == "8");
  CHECK(value_of(args, "--vocab") == "65");
  CHECK(value_of(args, "--dtype") == "bf16");
  CHECK(value_of(args, "--threads") == "2");
  CHECK(value_of(args, "--clock") == "cpu");
  CHECK(std::stod(value_of(args, "--lr")) == 3e-4);
  CHECK(value_of(args, "--optimizer") == "adamw-fused");
  CHECK(value_of(args, "--strategies") == "none,sac-mm");
  CHECK(std::find(args.begin(), args.end(), "--sdpa") == args.end());
  CHECK(std::find(args.begin(), args.end(), "--config") == args.end());  // the GPT has no flavour
  CHECK(step_session_request(gpt()).rfind("{\"args\":[\"--model\",\"gpt\"", 0) == 0);

  StepPeerConfig llama = gpt();
  llama.shape.model = "llama";
  llama.shape.kv_heads = 2;
  llama.shape.ffn_hidden = 768;
  llama.llama_config = "llama3_8b";
  llama.attention = "sdpa";
  llama.fused_adamw = false;
  const auto largs = step_peer_args(llama);
  CHECK(value_of(largs, "--config") == "llama3_8b");
  CHECK(value_of(largs, "--kv-heads") == "2");
  CHECK(value_of(largs, "--ffn") == "768");
  CHECK(value_of(largs, "--optimizer") == "adamw");
  CHECK(std::find(largs.begin(), largs.end(), "--sdpa") != largs.end());
}

TEST_CASE("parse_step_session takes the peer's framework and refuses an error, other strategies, threads or clock",
          "[bench]") {
  const StepPeerConfig c = gpt();
  CHECK(parse_step_session("peer", R"({"framework": "pytorch 2.15.0", "strategies": ["none", "sac-mm"], "threads": 2,
                                       "clock": "cpu"})", c) == "pytorch 2.15.0");
  struct Case {
    const char* answer;
    const char* error;
  };
  const Case cases[] = {
      {"hello", "memory_vs_recompute --beside peer: its first answer is not a JSON object: hello (run "
                "bench/torch_reference.py --serve)"},
      {R"({"error": "the session's args: unrecognized arguments: --bogus"})",
       "memory_vs_recompute --beside peer: the session's args: unrecognized arguments: --bogus"},
      {R"({"framework": "pytorch", "threads": 2, "clock": "cpu"})",
       "memory_vs_recompute --beside peer: its first answer needs 'framework' (a string), 'strategies' (a list), "
       "'threads' (an integer) and 'clock', got {\"framework\": \"pytorch\", \"threads\": 2, \"clock\": \"cpu\"}"},
      {R"({"framework": "pytorch", "strategies": ["none"], "threads": 2, "clock": "cpu"})",
       "memory_vs_recompute --beside peer: it runs [\"none\"] on 2 thread(s) by the cpu clock, asked for "
       "[\"none\",\"sac-mm\"] on 2 by the cpu clock"},
      {R"({"framework": "pytorch", "strategies": ["none", "sac-mm"], "threads": 1, "clock": "wall"})",
       "memory_vs_recompute --beside peer: it runs [\"none\",\"sac-mm\"] on 1 thread(s) by the wall clock, asked for "
       "[\"none\",\"sac-mm\"] on 2 by the cpu clock"},
  };
  for (const Case& k : cases) {
    INFO(k.answer);
    CHECK_THROWS_MATCHES(parse_step_session("peer", k.answer, c), Error, Catch::Matchers::Message(k.error));
  }
}

TEST_CASE("parse_step_answer reads a step's milliseconds and refuses an error or a figure that is not > 0",
          "[bench]") {
  CHECK(step_request("sac-mm") == R"({"strategy":"sac-mm"})");
  CHECK(parse_step_answer("peer", "none", R"({"ms": 12.5, "loss": 2.3})") == 12.5);
  CHECK_THROWS_MATCHES(parse_step_answer("peer", "none", "{"), Error,
                       Catch::Matchers::Message("memory_vs_recompute --beside peer: its answer for the step of 'none' "
                                                "is not a JSON object: {"));
  CHECK_THROWS_MATCHES(
      parse_step_answer("peer", "full", R"({"error": "out of memory"})"), Error,
      Catch::Matchers::Message("memory_vs_recompute --beside peer: the step of 'full': out of memory"));
  for (const char* bad : {R"({"ms": 0})", R"({"ms": -1})", R"({"ms": "5"})", R"({"loss": 1})"})
    CHECK_THROWS_WITH(parse_step_answer("peer", "none", bad),
                      Contains("the step of 'none': 'ms' must be a number > 0, got "));
}

TEST_CASE("with a plan file the peer is given --plan and runs it as its strategy 'plan'; PlanForPeer writes the plan "
          "and removes it",
          "[bench]") {
  StepPeerConfig c = gpt();
  c.plan_file = "/tmp/p.json";
  const auto args = step_peer_args(c);
  CHECK(value_of(args, "--plan") == "/tmp/p.json");
  CHECK(value_of(args, "--strategies") == "none,sac-mm,plan");
  CHECK(parse_step_session("peer", R"({"framework": "f", "strategies": ["none", "sac-mm", "plan"], "threads": 2,
                                       "clock": "cpu"})", c) == "f");
  CHECK_THROWS_WITH(parse_step_session("peer", R"({"framework": "f", "strategies": ["none", "sac-mm"], "threads": 2,
                                                   "clock": "cpu"})", c),
                    Contains("asked for [\"none\",\"sac-mm\",\"plan\"] on 2 by the cpu clock"));

  remat::bench::PlanningArgs machine;  // fixed figures: no timing in a test
  machine.peak_flops = 4.9e11;
  machine.bandwidth = 1.2e10;
  const remat::bench::ModelShape small{2, 32, 32, 2, 17, 2};
  const remat::CheckpointPlan plan =
      remat::bench::plan_budget(small, {}, int64_t{1} << 40, remat::Device{remat::kCPU}, "--budget", machine);
  std::string path;
  {
    remat::bench::PlanForPeer file(plan);
    path = file.path();
    CHECK(path.rfind("/remat_beside_plan_", std::string::npos) != std::string::npos);
    const remat::CheckpointPlan back = remat::CheckpointPlan::load(path);
    CHECK(back.to_json() == plan.to_json());
  }
  CHECK(std::fopen(path.c_str(), "r") == nullptr);  // removed
}
