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
  int64_t stop;  // pricer.offload_dry_runs() at which it stops
  KeepSet best;  // best.offload may be empty (nothing offloaded yet)
  RunResult best_run;

  bool budget_left() const { return pricer.offload_dry_runs() < stop; }
  // Prices `set` (if dry runs are left and it offloads something: the phases never price a keep-set
  // that offloads nothing, which is the keep/recompute search's to price); whether it became `best`.
  bool try_set(const KeepSet& set);
};

// The phases, each from `best`: the longest prefix (by value) of the recomputed candidates
// offloaded that fits; then first fit, best value first: each recomputed candidate kept, else
// offloaded, then each offloaded one kept; then the same from every kept candidate offloaded
// instead (which frees device memory for more). `phase` names each for
// error messages.
void search_offload(OffloadSearch& s, const std::function<void(const char*)>& phase);

// The phases one by one (for tests).
void offload_prefix(OffloadSearch& s);
void offload_first_fit(OffloadSearch& s);
void offload_kept_then_first_fit(OffloadSearch& s);

}  // namespace remat::planner_detail
