// The planner's search (see planner_search.h; no PyTorch counterpart).
#include "checkpoint/planner_search.h"

#include <algorithm>

#include "checkpoint/knapsack_frontier.h"
#include "checkpoint/planner_offload.h"

namespace remat::planner_detail {

namespace {

// The budgets the search runs at: kRungs + 1 of them, evenly from the lowest feasible peak up to
// keep-all's (the last just below it).
constexpr int kRungs = 4;

// Recompute cost saved per byte kept, highest first (the order std::stable_sort keeps ties in).
struct ByValue {
  const Data& data;
  bool operator()(size_t a, size_t b) const {
    return data.calls[a].cost * static_cast<double>(data.calls[b].bytes) >
           data.calls[b].cost * static_cast<double>(data.calls[a].bytes);
  }
};

std::vector<bool> prefix_of(const std::vector<size_t>& candidates, size_t k, size_t n) {
  std::vector<bool> s(n, false);
  for (size_t i = 0; i < k; ++i) s[candidates[i]] = true;
  return s;
}

// The keepable calls whose op is chosen (chosen[k] for ops[k]).
std::vector<bool> keep_ops(const Search& s, const std::vector<std::string>& ops, const std::vector<bool>& chosen) {
  std::vector<bool> set(s.data.calls.size(), false);
  for (size_t c : s.space.keepable)
    set[c] = chosen[static_cast<size_t>(std::find(ops.begin(), ops.end(), s.data.calls[c].op) - ops.begin())];
  return set;
}

}  // namespace

SearchSpace order_by_value(Data* data) {
  SearchSpace space;
  const size_t n = data->calls.size();
  for (size_t i = 0; i < n; ++i)
    if (data->calls[i].needed && !data->calls[i].mutated && data->calls[i].bytes > 0) space.candidates.push_back(i);
  // Outputs backward does not need, but a rerun would recompute on the way to one it does (the
  // scores of attention, before the softmax backward needs): keeping one replays it instead.
  for (size_t i = 0; i < n; ++i)
    if (!data->calls[i].needed && !data->calls[i].mutated && data->calls[i].bytes > 0 && data->calls[i].cost > 0)
      space.replay.push_back(i);
  const ByValue by_value{*data};
  std::stable_sort(space.candidates.begin(), space.candidates.end(), by_value);
  std::stable_sort(space.replay.begin(), space.replay.end(), by_value);
  data->candidates = space.candidates;
  data->replay_candidates = space.replay;
  space.keepable = space.candidates;  // both, by value
  space.keepable.insert(space.keepable.end(), space.replay.begin(), space.replay.end());
  std::stable_sort(space.keepable.begin(), space.keepable.end(), by_value);
  space.all.assign(n, false);
  for (size_t c : space.candidates) space.all[c] = true;
  return space;
}

bool Search::better(const RunResult& r) const { return fits(r) && cheaper(r, best_run); }

bool Search::try_set(const std::vector<bool>& s) {
  if (!budget_left()) return false;
  RunResult r = pricer.price(s);
  if (!better(r)) return false;
  best = s;
  best_run = r;
  return true;
}

void search_prefix(Search& s) {
  const std::vector<size_t>& candidates = s.space.candidates;
  const size_t n = s.data.calls.size();
  size_t lo = 0, hi = candidates.size();  // prefix lo fits, prefix hi does not (the budget is below keep-all's peak)
  while (hi - lo > 1 && s.budget_left()) {
    size_t mid = lo + (hi - lo) / 2;
    RunResult r = s.pricer.price(prefix_of(candidates, mid, n));
    if (s.fits(r)) {  // a longer prefix keeps a superset: it recomputes no more
      lo = mid;
      if (s.better(r)) s.best = prefix_of(candidates, mid, n), s.best_run = r;
    } else {
      hi = mid;
    }
  }
}

// Keeping all of a region's matmuls can beat any prefix of the per-call order, because a region
// rerun only for cheap ops costs little. Every subset of the ops when there are few, else each op
// alone and the prefixes of the ops by value.
void search_by_op(Search& s) {
  std::vector<std::string> ops;  // by value: the op of the most valuable call first
  for (size_t c : s.space.keepable)
    if (std::find(ops.begin(), ops.end(), s.data.calls[c].op) == ops.end()) ops.push_back(s.data.calls[c].op);
  constexpr size_t kAllSubsetsUpTo = 6;
  if (ops.size() <= kAllSubsetsUpTo) {
    for (uint32_t mask = 1; mask + 1 < (1u << ops.size()); ++mask) {  // not none, not all (both tried)
      std::vector<bool> chosen(ops.size());
      for (size_t k = 0; k < ops.size(); ++k) chosen[k] = (mask >> k) & 1u;
      s.try_set(keep_ops(s, ops, chosen));
    }
  } else {
    for (size_t k = 0; k < ops.size(); ++k) {
      std::vector<bool> alone(ops.size(), false), prefix(ops.size(), false);
      alone[k] = true;
      for (size_t j = 0; j <= k; ++j) prefix[j] = true;
      s.try_set(keep_ops(s, ops, alone));
      if (k + 1 < ops.size()) s.try_set(keep_ops(s, ops, prefix));
    }
  }
}

// Bytes kept rise along the front, and the peak with them.
void search_front(Search& s) {
  const std::vector<std::vector<bool>>& front = s.space.front;
  if (front.size() <= 1) return;
  size_t lo = 0, hi = front.size() - 1;  // front[0] keeps nothing: it fits
  while (lo < hi && s.budget_left()) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    RunResult r = s.pricer.price(front[mid]);
    if (s.fits(r)) {
      lo = mid;
      if (s.better(r)) s.best = front[mid], s.best_run = r;
    } else {
      hi = mid - 1;
    }
  }
}

void search_whole_regions(Search& s) {
  for (const Data::Region& region : s.data.regions) {
    std::vector<bool> set = s.best;
    bool adds = false;
    for (size_t c : region.calls)
      if (s.space.all[c] && !set[c]) set[c] = adds = true;
    if (adds) s.try_set(set);
  }
}

void search_first_fit(Search& s) {
  for (size_t c : s.space.keepable) {
    if (s.best[c]) continue;
    std::vector<bool> set = s.best;
    set[c] = true;
    s.try_set(set);
  }
}

// For each candidate left out, best value first, the kept candidates from the lowest value up
// whose own recompute cost is lower than its: only such a swap can lower the recompute (whether the
// call swapped in fits is the dry run's to say).
void search_swaps(Search& s) {
  const std::vector<size_t>& candidates = s.space.candidates;
  for (size_t in : candidates) {
    if (s.best[in] || !s.budget_left()) continue;
    for (auto out = candidates.rbegin(); out != candidates.rend() && s.budget_left(); ++out) {
      if (!s.best[*out] || s.data.calls[*out].cost >= s.data.calls[in].cost) continue;
      std::vector<bool> set = s.best;
      set[*out] = false;
      set[in] = true;
      if (s.try_set(set)) break;
    }
  }
}

namespace {

// The search's moves at one budget, in order, with the names errors give them: the longest prefix,
// keep-sets by op, the knapsack's front, then local improvement, each move priced by a dry run.
struct Phase {
  const char* name;
  void (*run)(Search&);
};
constexpr Phase kPhases[] = {
    {"the longest prefix of the candidates that fits", search_prefix},
    {"keep-sets by op", search_by_op},
    {"the knapsack's front", search_front},
    {"whole regions", search_whole_regions},
    {"first fit", search_first_fit},
    {"swaps", search_swaps},
};

}  // namespace

Search search_at(Planner& planner, const SearchSpace& space, int64_t budget, int64_t allowance,
                 const std::string& rung_name) {
  const size_t start = planner.cheapest_fitting(budget);  // nothing kept fits: the budget is >= its peak
  Search s{planner.data, space, planner, budget, planner.dry_runs() + allowance,
           planner.evaluated.at(start).first.keep, planner.evaluated.at(start).second};
  for (const Phase& phase : kPhases) {
    planner.set_phase(rung_name + ": " + phase.name);
    phase.run(s);
  }
  return s;
}

namespace {

// The offload phases at a rung (planner_offload.h), from the cheapest keep/recompute set that fits
// it among those the searches up to the next rung priced (the rung's plan, or a cheaper one the
// next rung's search came across), and from the next rung's plan (cheaper, larger: offloading what
// it keeps may make it fit), with dry runs of their own: twice an equal share of max_dry_runs per
// rung. The next rung is always searched, so what they price at a rung depends on the profile
// only, not on the budget.
void offload_at(Planner& planner, const SearchSpace& space, const Search& rung, size_t priced, const Search* next,
                const std::string& rung_name) {
  const int64_t allowance = 2 * planner.data.options.max_dry_runs / (kRungs + 1);
  const auto& [start, start_run] = planner.evaluated.at(planner.cheapest_fitting(rung.budget, false, priced));
  OffloadSearch o{planner.data, space, planner, rung.budget, planner.host_budget(), planner.host_link_bandwidth(),
                  planner.offload_dry_runs() + allowance, start, start_run};
  auto phase = [&](const char* name) { planner.set_phase(rung_name + ": " + name); };
  if (next != nullptr) {
    phase("offload: the next rung's kept outputs cheaper to move than to recompute, then more kept");
    offload_kept(o, KeepSet{next->best, {}});
  }
  search_offload(o, phase);
}

}  // namespace

// The ladder: a larger budget never costs more. The plan for a budget is the cheapest keep-set
// that fits it among all that the searches at the rungs up to the first at or above it priced,
// each search starting from the cheapest keep-set known to fit its rung ("the plan of the next
// smaller budget"). The rungs depend on the profile only, so for two budgets the larger one's
// searches include the smaller one's: its choice is among more keep-sets, under a looser bound.
// With a host budget the keep/recompute searches go one rung further (when there is one), then
// the offload phases run at each rung up to the first at or above the budget, from that rung's
// plan and the next one's: for a larger budget, again a superset.
namespace {

// Kept outputs that neither backward nor a rerun reads (backward saves none of them and every
// rerun stops before them: a policy that keeps all of an op, or any ladder keep-set, may have
// them) cost nothing in remat, whose checkpoint releases them when the region's forward ends.
// PyTorch's SAC storage holds every kept output to the region's backward, so a plan applied there
// (python/remat_plan) would hold their bytes too. The chosen keep-set's dry run reported what its
// regions released; those backward does not read are recomputed instead, if that prices no
// costlier and still fits (one more dry run). The plan is then the same in remat, and names
// PyTorch's bytes (docs/pytorch.md).
KeepSet drop_unread_keeps(Planner& planner, KeepSet set, RunResult run, int64_t budget) {
  KeepSet next = set;
  bool any = false;
  for (size_t c : run.released) {
    const bool offloaded = !set.offload.empty() && set.offload[c];
    if (set.keep[c] && !offloaded && !planner.data.calls[c].needed) next.keep[c] = false, any = true;
  }
  if (!any || planner.dry_runs() >= planner.data.options.max_dry_runs - 1) return set;  // the final check's
  planner.set_phase("dropping kept outputs nothing reads");
  const RunResult r = planner.price(next);
  return fits(r, budget, planner.host_budget()) && r.cost() <= run.cost() ? next : set;
}

}  // namespace

KeepSet search_ladder(Planner& planner, SearchSpace* space, int64_t budget, int64_t recompute_all_peak,
                      int64_t keep_all_peak) {
  if (budget >= keep_all_peak) return KeepSet{space->all, {}};
  std::vector<bool> keepable_mask(planner.data.calls.size(), false);
  for (size_t c : space->keepable) keepable_mask[c] = true;
  space->front = knapsack_frontier(planner.data, keepable_mask);
  const int64_t lo = recompute_all_peak, hi = keep_all_peak;
  // The rungs share max_dry_runs less the profile, keep-all, drop_unread_keeps' one and the final
  // check: each may use an equal share of what the rungs below it left (which depends on the
  // profile only).
  const int64_t searches_start = planner.dry_runs();
  const int64_t shared = planner.data.options.max_dry_runs - searches_start - 2;
  const bool offload = planner.host_budget() > 0;
  std::vector<Search> rungs;
  std::vector<std::string> names;
  std::vector<size_t> priced;  // evaluated.size() after each rung's search
  size_t needed = kRungs;  // the first rung at or above the budget
  for (int j = 0; j <= kRungs; ++j) {
    const int64_t rung = j < kRungs ? lo + (hi - lo) * j / kRungs : hi - 1;  // the last: just below keep-all
    const int64_t allowance = (shared - (planner.dry_runs() - searches_start)) / (kRungs + 1 - j);
    names.push_back("search at rung " + std::to_string(j + 1) + " of " + std::to_string(kRungs + 1) + " (" +
                    std::to_string(rung) + " bytes)");
    rungs.push_back(search_at(planner, *space, rung, allowance, names.back()));
    priced.push_back(planner.evaluated.size());
    if (rung >= budget && needed == static_cast<size_t>(kRungs)) needed = static_cast<size_t>(j);
    if (static_cast<size_t>(j) >= needed + (offload ? 1 : 0)) break;
  }
  if (offload) {
    for (size_t j = 0; j <= needed && j < rungs.size(); ++j)
      offload_at(planner, *space, rungs[j], priced[std::min(j + 1, rungs.size() - 1)],
                 j + 1 < rungs.size() ? &rungs[j + 1] : nullptr, names[j]);
  }
  // A copy: drop_unread_keeps prices more keep-sets, which appends to (and may move) evaluated.
  const std::pair<KeepSet, RunResult> chosen = planner.evaluated.at(planner.cheapest_fitting(budget, /*with_offload=*/true));
  return drop_unread_keeps(planner, chosen.first, chosen.second, budget);
}

}  // namespace remat::planner_detail
