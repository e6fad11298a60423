// The planner's search (no PyTorch counterpart; torch/_functorch/partitioners.py chooses what a
// compiled graph saves under activation_memory_budget by a knapsack on estimates, sac_ilp.py by an
// integer program): the phases that choose a keep-set for a budget, each keep-set priced by a dry
// run. After the profile: the candidates ordered by value (order_by_value); then at each rung of
// a ladder of budgets (search_ladder, search_at) the longest prefix that fits (search_prefix),
// keep-sets by op (search_by_op), the knapsack's front (search_front), whole-region completions
// (search_whole_regions), first-fit additions (search_first_fit) and one-for-one swaps
// (search_swaps). Internal (checkpoint/planner.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/plan_data.h"
#include "checkpoint/planner_dry_runs.h"

namespace remat::planner_detail {

// What the search chooses from, fixed by the profile.
struct SearchSpace {
  std::vector<size_t> candidates;        // outputs backward needs, best value first
  std::vector<size_t> replay;            // outputs only a rerun recomputes (data.replay_candidates), likewise
  std::vector<size_t> keepable;          // both, best value first
  std::vector<bool> all;                 // the candidates as a keep-set: keep-all
  std::vector<std::vector<bool>> front;  // the knapsack's (knapsack_frontier.h), made if a search runs
};

// The phase after the profile: the calls that may be kept, by value (recompute cost saved per byte
// kept, highest first; ties in forward order). Also sets data->candidates and replay_candidates.
SearchSpace order_by_value(Data* data);

// The search at one budget: the cheapest keep-set found so far that fits it, and how many dry runs
// it may still make. Each phase below starts from `best` and leaves the best it found there.
struct Search {
  const Data& data;
  const SearchSpace& space;
  KeepSetPricer& pricer;
  int64_t budget;
  int64_t stop;  // pricer.dry_runs() at which the search stops
  std::vector<bool> best;
  RunResult best_run;

  bool fits(const RunResult& r) const { return r.peak <= budget; }
  // Fits, and costs less than `best` (ties: the lower peak).
  bool better(const RunResult& r) const;
  bool budget_left() const { return pricer.dry_runs() < stop; }
  // Prices `s` (if dry runs are left); whether it became `best`.
  bool try_set(const std::vector<bool>& s);
};

// The longest prefix of the candidates that fits (binary search on the dry run's peak).
void search_prefix(Search& s);
// Keep-sets by op: every candidate of some set of ops, which is what hand-made policies keep.
void search_by_op(Search& s);
// The cheapest keep-set along the knapsack's front that fits (binary search on the peak).
void search_front(Search& s);
// Whole regions: keeping all a region needs means it is not rerun at all.
void search_whole_regions(Search& s);
// First fit: every keepable output left, in order, added alone.
void search_first_fit(Search& s);
// One-for-one swaps: a kept candidate out, a costlier one in.
void search_swaps(Search& s);

// The phases above at one budget, from the cheapest keep-set `planner` priced so far that fits it;
// at most `allowance` new dry runs (half of them the offload phases', with a host budget). `rung_name` heads the phases' names in error messages.
// Returns the search, its best keep-set and that one's result.
Search search_at(Planner& planner, const SearchSpace& space, int64_t budget, int64_t allowance,
                 const std::string& rung_name);

// The plan's keep-set for `budget` (at least recompute-all's peak): keep-all if it fits, else the
// cheapest that fits among all the searches at a ladder of budgets up to it priced.
// With a host budget, each rung's search ends with the offload phases (planner_offload.h), and
// the cheapest may offload.
KeepSet search_ladder(Planner& planner, SearchSpace* space, int64_t budget, int64_t recompute_all_peak,
                      int64_t keep_all_peak);

}  // namespace remat::planner_detail
