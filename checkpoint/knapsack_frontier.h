// The planner's multiple-choice knapsack (no PyTorch counterpart; torch/distributed/_tools/
// sac_ilp.py solves the same choice, what each module saves under a memory bound, as an integer
// program): the Pareto front of (bytes kept, recompute cost) over per-region keep-sets, priced
// from the profile alone. A pure function of the plan's data. Internal (checkpoint/planner_search.cpp).
#pragma once

#include <vector>

#include "checkpoint/plan_data.h"

namespace remat::planner_detail {

// The keep-sets along the Pareto front of (bytes kept, recompute cost), cheapest last: each
// region's menu of keep-sets priced analytically from the profile, combined over the regions by a
// multiple-choice knapsack. A region rerun recomputes the calls up to its last needed output that
// is not kept, less the kept ones (replayed), so its cost under a keep-set is known without a dry
// run; regions that repeat (a second training step in `step`) cost once per instance. A region's
// items are its keepable calls one by one, or (more than 18) the copies of one call's output as one
// item (Data::Call::copy_of) and the rest one by one, or (still more) all calls of one op; each
// region's keep-sets are every subset of its items, enumerated once for regions alike (a model's
// layers). Bytes kept only approximate the peak, which the caller checks by dry runs along the
// front. Empty when a region is too irregular to enumerate (then the other moves still search).
// keepable[c]: whether call c may be kept. Each set has one entry per call of `data`; the first
// keeps nothing.
std::vector<std::vector<bool>> knapsack_frontier(const Data& data, const std::vector<bool>& keepable);

}  // namespace remat::planner_detail
