// `memory_vs_recompute --beside COMMAND`: PyTorch's training step of each strategy, taken by a peer
// process (bench/torch_reference.py --serve) right after remat's step of the same strategy, one JSON
// line each way (no PyTorch counterpart; bench/peer_process.h runs the child). Timed in turn that
// way, a slow spell of a shared machine hits both sides of a ratio alike, where two runs minutes
// apart moved it by 0.25 and more.
#pragma once

#include <string>
#include <vector>

#include "bench/activation_model.h"
#include "remat.h"

namespace remat::bench {

// The run the peer repeats: the model's sizes, dtype, threads, clock, strategies and optimizer.
struct StepPeerConfig {
  ModelShape shape;
  std::string llama_config = "debugmodel";  // --config: torchtitan's flavour (its rotary theta, FFN rule)
  std::string device = "cpu", dtype = "f32", clock = "wall", attention = "math";
  int threads = 1;
  double lr = 1e-3;
  bool fused_adamw = true;
  std::vector<std::string> strategies;
  // A plan file (docs/plan_format.md) the peer applies too, as its strategy kStepPeerPlan; "": none.
  std::string plan_file;
};

// The peer's name for the run under plan_file (torch_reference.py --plan FILE: the row 'plan').
inline constexpr const char* kStepPeerPlan = "plan";

// --beside with --budget: the plan saved where the peer can read it (a file made by mkstemp under
// $TMPDIR, else /tmp), removed when this is destroyed. Throws remat::Error when it cannot be written.
class PlanForPeer {
 public:
  explicit PlanForPeer(const CheckpointPlan& plan);
  ~PlanForPeer();
  PlanForPeer(const PlanForPeer&) = delete;
  PlanForPeer& operator=(const PlanForPeer&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The flags of bench/torch_reference.py that set up the same run (every size given explicitly).
std::vector<std::string> step_peer_args(const StepPeerConfig& c);

// The session's first request, {"args": [flags]}.
std::string step_session_request(const StepPeerConfig& c);

// Reads the peer's answer to the first request: its framework ("pytorch 2.15.0"). Throws
// remat::Error naming the command when the answer is not JSON, carries "error", or runs other
// strategies, threads or another clock than asked.
std::string parse_step_session(const std::string& command, const std::string& answer, const StepPeerConfig& c);

// One step of `strategy`: the request and the step's milliseconds from its answer (> 0). Throws
// remat::Error naming the command and the strategy on an "error" answer or a malformed one.
std::string step_request(const std::string& strategy);
double parse_step_answer(const std::string& command, const std::string& strategy, const std::string& answer);

}  // namespace remat::bench
