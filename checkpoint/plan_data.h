// What a checkpointing plan was made from (no PyTorch counterpart; sac_estimator.py's SACStats
// per module are the closest): every op call SAC saw in a checkpointed region, keyed
// "scope / op / #index", with its bytes and recompute cost, the regions in order, and the
// profiling run's call sequence that every later dry run must repeat. Internal: remat.h does not
// reach it (checkpoint/planner.h declares CheckpointPlan::Data only).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/planner.h"

namespace remat {

struct CheckpointPlan::Data {
  struct Call {
    std::string key;
    std::string op;                 // "aten::mm"
    std::vector<Shape> arg_shapes;  // what the plan was made for
    int64_t bytes = 0;              // new output bytes of one call
    double cost = 0;                // recompute cost of one call
    bool needed = false;            // backward saves (a view of) its output
    bool mutated = false;           // an in-place op changes its output later: SAC cannot keep it
    bool kept = false;
    bool offloaded = false;         // the plan moves its output to host memory (MUST_CPU_OFFLOAD)
    // A copy (clone, contiguous, _to_copy) of its region's call copy_of's output (or of a view of
    // it), its only tensor argument; -1 if none. Matmul's copies of q, k^T and v, which bmm saves,
    // are copies of the qkv projection's output: the knapsack takes them as one item
    // (knapsack_frontier.h).
    int64_t copy_of = -1;
    // Its tensor outputs (tensor lists flattened, undefined ones left out): what a plan file lists.
    struct Output {
      ScalarType dtype = kFloat;
      Shape shape;
      bool operator==(const Output& o) const { return dtype == o.dtype && shape == o.shape; }
    };
    std::vector<Output> outputs;
    bool arg_shapes_known = true;  // false for a call read from a file that does not list them
  };
  struct Region {
    std::string scope;
    std::vector<size_t> calls;  // in forward order
    double overhead = 0, flops = 0;
    int64_t recomputed = 0;
  };
  std::vector<Call> calls;
  std::unordered_map<std::string, size_t> by_key;
  std::vector<Region> regions;
  std::vector<size_t> candidates;         // outputs backward needs, in the search's order
  std::vector<size_t> replay_candidates;  // outputs only a rerun would recompute, likewise
  PlannerOptions options;
  // The profiling run's calls in order: every later dry run must make the same ones.
  struct Seen {
    size_t region;  // ordinal of its region in the run
    size_t call;    // index into calls
    std::vector<Shape> arg_shapes;
  };
  std::vector<Seen> sequence;
  // A plan read from a file (CheckpointPlan::from_json): only calls and regions are known, a
  // region's scope is its name, a call's key is call_key(region name, op, index), and policy()
  // finds a call's region by its scope (checkpoint/plan_file_read.cpp).
  bool loaded = false;
};

namespace planner_detail {

using Data = CheckpointPlan::Data;

// "layers.3.mlp.fc2 / aten::mm / #0" ("<top>" for the empty scope): how a plan names a call.
std::string call_key(const std::string& scope, const std::string& op, int64_t index);
// The shapes of a call's tensor arguments ([-1] for an undefined one): what a plan checks a call by.
std::vector<Shape> arg_shapes(const std::vector<IValue>& args);
// "1.25 MiB": how a plan prints bytes.
std::string mib(int64_t bytes);
// The tensor outputs of a call, as a plan file lists them (Data::Call::outputs).
std::vector<Data::Call::Output> output_metas(const std::vector<IValue>& outputs);
// `op(f32[8x128],i64[]);`: one call in a region's canonical text (checkpoint/plan_file.h).
std::string canonical_call(const std::string& op, const std::vector<Data::Call::Output>& outputs);
// save, recompute or offload: a call's decision in a plan file.
const char* decision_name(const Data::Call& c);
// The regions a plan file lists: each scope once, in the order they first ran.
std::vector<const Data::Region*> file_regions(const Data& data);
// plan_fingerprint of a region's canonical text.
std::string region_fingerprint(const Data& data, const Data::Region& r);
// The policy of a plan read from a file (Data::loaded; checkpoint/plan_file_read.cpp).
PolicyFn loaded_policy(std::shared_ptr<const Data> data);

}  // namespace planner_detail
}  // namespace remat
