// The planner's offload phases (see planner_offload.h; no PyTorch counterpart).
#include "checkpoint/planner_offload.h"

#include <algorithm>
#include <utility>

#include "checkpoint/offload_cost.h"

namespace remat::planner_detail {

namespace {

bool offloaded(const KeepSet& s, size_t c) { return !s.offload.empty() && s.offload[c]; }

KeepSet with_offload_vector(KeepSet s) {
  if (s.offload.empty()) s.offload.assign(s.keep.size(), false);
  return s;
}

// c moved to `keep` (true) or offloaded (false).
KeepSet moved(const KeepSet& from, size_t c, bool keep) {
  KeepSet s = with_offload_vector(from);
  s.keep[c] = keep;
  s.offload[c] = !keep;
  return s;
}

}  // namespace

bool OffloadSearch::try_set(const KeepSet& set) {
  if (!budget_left() || std::find(set.offload.begin(), set.offload.end(), true) == set.offload.end()) return false;
  const RunResult r = pricer.price(set);
  if (!fits(r, budget, host_budget) || !cheaper(r, best_run)) return false;
  best = set;
  best_run = r;
  return true;
}

namespace {

double exposed_alone(const OffloadSearch& s, const std::vector<bool>& keep, size_t c) {
  std::vector<bool> off(keep.size(), false);
  off[c] = true;
  return transfer_cost(s.data, keep, off, s.bandwidth).exposed_seconds;
}

}  // namespace

double exposed_alone(const OffloadSearch& s, size_t c) { return exposed_alone(s, s.best.keep, c); }

namespace {

// The longest prefix of `order` that fits with each of its calls moved as `add` says (true: kept,
// false: offloaded), from s.best, by binary search; every prefix priced may become best. Returns
// the set of the longest prefix that fits (s.best's set if none does) and its result.
std::pair<KeepSet, RunResult> longest_fitting_prefix(OffloadSearch& s, const std::vector<size_t>& order, bool keep) {
  const KeepSet start = with_offload_vector(s.best);
  auto prefix = [&](size_t k) {
    KeepSet set = start;
    for (size_t i = 0; i < k; ++i) {
      set.keep[order[i]] = keep;
      set.offload[order[i]] = !keep;
    }
    return set;
  };
  // More moved up: more bytes held, on the device or the host: the peaks rise with the prefix.
  std::pair<KeepSet, RunResult> longest{start, s.best_run};
  size_t lo = 0, hi = order.size() + 1;  // prefix lo fits (the start), prefix hi is past the end
  while (hi - lo > 1 && s.budget_left()) {
    const size_t mid = lo + (hi - lo) / 2;
    KeepSet set = prefix(mid);
    if (std::find(set.offload.begin(), set.offload.end(), true) == set.offload.end()) break;  // not the phases' to price
    const RunResult r = s.pricer.price(set);
    if (fits(r, s.budget, s.host_budget)) {
      lo = mid;
      if (cheaper(r, s.best_run)) s.best = set, s.best_run = r;
      longest = {std::move(set), r};
    } else {
      hi = mid;
    }
  }
  return longest;
}

// The recomputed candidates whose recompute costs more than their transfer alone exposes, most
// saved per byte first.
std::vector<size_t> worth_offloading(const OffloadSearch& s) {
  std::vector<std::pair<double, size_t>> ranked;  // (seconds saved per byte, call)
  for (size_t c : s.space.candidates) {
    if (s.best.keep[c] || offloaded(s.best, c)) continue;
    const double saved = s.data.calls[c].cost - exposed_alone(s, c);
    if (saved > 0) ranked.emplace_back(saved / static_cast<double>(s.data.calls[c].bytes), c);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> order;
  for (const auto& r : ranked) order.push_back(r.second);
  return order;
}

// A set that does not fit (*set, priced *r) made to fit by recomputing the fewest of what it keeps
// or offloads, lowest value first (binary search on how many; all of them recomputed fits, the
// budget being at least recompute-all's peak). False if the dry runs ran out first.
bool recompute_until_fits(OffloadSearch& s, KeepSet* set, RunResult* r) {
  std::vector<size_t> low_first;  // what it keeps, then what it offloads, each lowest value first
  for (auto c = s.space.candidates.rbegin(); c != s.space.candidates.rend(); ++c)
    if (set->keep[*c]) low_first.push_back(*c);
  for (auto c = s.space.candidates.rbegin(); c != s.space.candidates.rend(); ++c)
    if (set->offload[*c]) low_first.push_back(*c);
  auto dropped = [&](size_t k) {
    KeepSet d = *set;
    for (size_t i = 0; i < k; ++i) d.keep[low_first[i]] = d.offload[low_first[i]] = false;
    return d;
  };
  size_t lo = 0, hi = low_first.size();  // dropping lo does not fit; dropping hi does (not priced yet)
  std::pair<KeepSet, RunResult> found{};
  bool any = false;
  while (hi - lo > 1 && s.budget_left()) {
    const size_t mid = lo + (hi - lo) / 2;
    KeepSet d = dropped(mid);
    if (std::find(d.offload.begin(), d.offload.end(), true) == d.offload.end()) {
      hi = mid;  // nothing offloaded left: the keep/recompute search's to price
      continue;
    }
    const RunResult m = s.pricer.price(d);
    if (fits(m, s.budget, s.host_budget)) {
      hi = mid;
      found = {std::move(d), m};
      any = true;
      if (cheaper(m, s.best_run)) s.best = found.first, s.best_run = m;
    } else {
      lo = mid;
    }
  }
  if (!any) return false;
  *set = std::move(found.first);
  *r = found.second;
  return true;
}

}  // namespace

void offload_prefix(OffloadSearch& s) { longest_fitting_prefix(s, worth_offloading(s), /*keep=*/false); }

void offload_kept(OffloadSearch& s) { offload_kept(s, s.best); }

void offload_kept(OffloadSearch& s, const KeepSet& start) {
  KeepSet hidden = with_offload_vector(start);
  bool moves = false;
  for (size_t c : s.space.candidates)
    if (start.keep[c] && exposed_alone(s, start.keep, c) < s.data.calls[c].cost)
      hidden.keep[c] = false, hidden.offload[c] = moves = true;
  if (!moves || !s.budget_left()) return;
  RunResult r = s.pricer.price(hidden);
  if (!fits(r, s.budget, s.host_budget) && !recompute_until_fits(s, &hidden, &r)) return;
  // From here even if it costs more than best: what it frees on the device buys back more.
  OffloadSearch from{s.data, s.space, s.pricer, s.budget, s.host_budget, s.bandwidth, s.stop, hidden, r};
  std::vector<size_t> recomputed;  // by value, as the keep/recompute search keeps
  for (size_t c : s.space.candidates)
    if (!hidden.keep[c] && !hidden.offload[c]) recomputed.push_back(c);
  auto [kept_more, kept_run] = longest_fitting_prefix(from, recomputed, /*keep=*/true);
  if (cheaper(from.best_run, s.best_run)) s.best = from.best, s.best_run = from.best_run;
  from.best = kept_more;  // on from the longest kept prefix that fits
  from.best_run = kept_run;
  offload_prefix(from);
  if (cheaper(from.best_run, s.best_run)) s.best = from.best, s.best_run = from.best_run;
}

// Two passes, best value first: each recomputed candidate kept, else offloaded; then each
// offloaded one kept (after the first pass, so that what it offloaded is not bought back first).
void offload_first_fit(OffloadSearch& s) {
  for (size_t c : s.space.candidates) {
    if (!s.budget_left()) return;
    if (s.best.keep[c] || offloaded(s.best, c)) continue;
    if (!s.try_set(moved(s.best, c, /*keep=*/true))) s.try_set(moved(s.best, c, /*keep=*/false));
  }
  for (size_t c : s.space.candidates) {
    if (!s.budget_left()) return;
    if (offloaded(s.best, c)) s.try_set(moved(s.best, c, /*keep=*/true));
  }
}

void search_offload(OffloadSearch& s, const std::function<void(const char*)>& phase) {
  phase("offload: the recomputed outputs worth moving, the longest prefix that fits");
  offload_prefix(s);
  phase("offload: the kept outputs cheaper to move than to recompute, then more kept");
  offload_kept(s);
  phase("offload: first fit, one step up");
  offload_first_fit(s);
}

}  // namespace remat::planner_detail
