// The planner's offload phases (no PyTorch counterpart; torchtitan's auto_perf_maxing chooses
// among saving, recomputing and offloading for compiled graphs only, by estimates): after the
// keep/recompute search at a budget, each candidate output may also be moved to pinned host
// memory (MUST_CPU_OFFLOAD), which costs transfer time (checkpoint/offload_cost.h) but no
// recompute and, between its region's forward end and its prefetch, no device memory. Each choice
// is priced by a dry run, which counts the device and host bytes exactly. Internal
// (checkpoint/planner_search.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "checkpoint/planner_dry_runs.h"
#include "checkpoint/planner_search.h"

namespace remat::planner_detail {

// The offload search at one budget: the cheapest choice found so far that fits the device budget
// and the host budget.
struct OffloadSearch {
  const Data& data;
  const SearchSpace& space;
  KeepSetPricer& pricer;
  int64_t budget, host_budget;
  double bandwidth;  // of the host link, bytes/s each way (what offload_cost.h prices transfers at)
  int64_t stop;  // pricer.offload_dry_runs() at which it stops
  KeepSet best;  // best.offload may be empty (nothing offloaded yet)
  RunResult best_run;

  bool budget_left() const { return pricer.offload_dry_runs() < stop; }
  // Prices `set` (if dry runs are left and it offloads something: the phases never price a keep-set
  // that offloads nothing, which is the keep/recompute search's to price); whether it became `best`.
  bool try_set(const KeepSet& set);
};

// The phases, each from `best`, each move priced by a dry run:
//   offload_prefix: the recomputed candidates whose recompute costs more than their transfer
//     alone would expose (transfer_cost), most saved per byte first: the longest prefix of them
//     offloaded that fits;
//   offload_kept: every kept candidate whose transfer alone exposes less than its recompute would
//     cost offloaded instead (the device holds it only until its region's forward ends); if that
//     does not fit, the fewest of its kept and offloaded outputs recomputed, lowest value first,
//     so that it does; then the longest prefix of the recomputed candidates, by value, kept in the
//     room that frees, then offload_prefix from there;
//   offload_first_fit: best value first, each recomputed candidate kept, else offloaded; then
//     each offloaded one kept.
// `phase` names each for error messages.
void search_offload(OffloadSearch& s, const std::function<void(const char*)>& phase);

// The phases one by one (for tests).
void offload_prefix(OffloadSearch& s);
void offload_kept(OffloadSearch& s);
// offload_kept from `start` instead of s.best (another rung's plan, which need not fit s.budget):
// what it prices may still become best.
void offload_kept(OffloadSearch& s, const KeepSet& start);
void offload_first_fit(OffloadSearch& s);
// The transfer seconds compute would not hide were call c offloaded alone, beside s.best's keep-set.
double exposed_alone(const OffloadSearch& s, size_t c);

}  // namespace remat::planner_detail
