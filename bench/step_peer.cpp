// No PyTorch counterpart: the protocol of `memory_vs_recompute --beside` (bench/step_peer.h).
#include "bench/step_peer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "remat.h"

namespace remat::bench {

using nlohmann::json;

namespace {

std::string from(const std::string& command) { return "memory_vs_recompute --beside " + command; }

std::string error_text(const json& e) { return e.is_string() ? e.get<std::string>() : e.dump(); }

}  // namespace

std::vector<std::string> step_peer_args(const StepPeerConfig& c) {
  const ModelShape& m = c.shape;
  std::vector<std::string> args = {"--model", m.model};
  if (m.is_llama()) {
    args.insert(args.end(), {"--config", c.llama_config, "--kv-heads", std::to_string(m.kv_heads_or_heads())});
    if (m.ffn_hidden > 0) args.insert(args.end(), {"--ffn", std::to_string(m.ffn_hidden)});
  }
  std::string strategies;
  for (const std::string& s : c.strategies) strategies += (strategies.empty() ? "" : ",") + s;
  if (!c.plan_file.empty()) {
    strategies += (strategies.empty() ? "" : ",") + std::string(kStepPeerPlan);
    args.insert(args.end(), {"--plan", c.plan_file});
  }
  char lr[32];
  std::snprintf(lr, sizeof lr, "%.17g", c.lr);
  args.insert(args.end(), {"--layers", std::to_string(m.layers), "--embd", std::to_string(m.embd), "--heads",
                           std::to_string(m.heads), "--seq", std::to_string(m.seq), "--batch", std::to_string(m.batch),
                           "--vocab", std::to_string(m.vocab), "--device", c.device, "--dtype", c.dtype, "--threads",
                           std::to_string(c.threads), "--clock", c.clock, "--lr", lr, "--optimizer",
                           c.fused_adamw ? "adamw-fused" : "adamw", "--strategies", strategies});
  if (c.attention == "sdpa") args.push_back("--sdpa");
  return args;
}

std::string step_session_request(const StepPeerConfig& c) { return json({{"args", step_peer_args(c)}}).dump(); }

std::string parse_step_session(const std::string& command, const std::string& answer, const StepPeerConfig& c) {
  const json doc = json::parse(answer, nullptr, /*allow_exceptions=*/false);
  REMAT_CHECK(!doc.is_discarded() && doc.is_object(), from(command), ": its first answer is not a JSON object: ",
              answer, " (run bench/torch_reference.py --serve)");
  REMAT_CHECK(!doc.contains("error"), from(command), ": ", error_text(doc["error"]));
  REMAT_CHECK(doc.contains("framework") && doc["framework"].is_string() && doc.contains("strategies") &&
                  doc["strategies"].is_array() && doc.contains("threads") && doc["threads"].is_number_integer() &&
                  doc.contains("clock") && doc["clock"].is_string(),
              from(command), ": its first answer needs 'framework' (a string), 'strategies' (a list), 'threads' (an "
              "integer) and 'clock', got ", answer);
  std::vector<std::string> asked = c.strategies;
  if (!c.plan_file.empty()) asked.push_back(kStepPeerPlan);
  REMAT_CHECK(doc["strategies"] == json(asked) && doc["threads"].get<int64_t>() == c.threads && doc["clock"] == c.clock,
              from(command), ": it runs ", doc["strategies"].dump(), " on ", doc["threads"].dump(),
              " thread(s) by the ", error_text(doc["clock"]), " clock, asked for ", json(asked).dump(), " on ",
              c.threads, " by the ", c.clock, " clock");
  return doc["framework"].get<std::string>();
}

PlanForPeer::PlanForPeer(const CheckpointPlan& plan) {
  const char* dir = std::getenv("TMPDIR");
  std::string name = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/remat_beside_plan_XXXXXX";
  const int fd = mkstemp(name.data());
  REMAT_CHECK(fd >= 0, "memory_vs_recompute --beside: cannot make a file for the plan the peer runs (", name, "): ",
              std::strerror(errno));
  close(fd);
  path_ = name;
  try {
    plan.save(path_);
  } catch (...) {
    std::remove(path_.c_str());
    throw;
  }
}

PlanForPeer::~PlanForPeer() { std::remove(path_.c_str()); }

std::string step_request(const std::string& strategy) { return json({{"strategy", strategy}}).dump(); }

double parse_step_answer(const std::string& command, const std::string& strategy, const std::string& answer) {
  const json doc = json::parse(answer, nullptr, /*allow_exceptions=*/false);
  const std::string where = "the step of '" + strategy + "'";
  REMAT_CHECK(!doc.is_discarded() && doc.is_object(), from(command), ": its answer for ", where,
              " is not a JSON object: ", answer);
  REMAT_CHECK(!doc.contains("error"), from(command), ": ", where, ": ", error_text(doc["error"]));
  REMAT_CHECK(doc.contains("ms") && doc["ms"].is_number() && doc["ms"].get<double>() > 0, from(command), ": ", where,
              ": 'ms' must be a number > 0, got ", answer);
  return doc["ms"].get<double>();
}

}  // namespace remat::bench
