// The planner's offload phases (see planner_offload.h; no PyTorch counterpart).
#include "checkpoint/planner_offload.h"

#include <algorithm>

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

void offload_prefix(OffloadSearch& s) {
  std::vector<size_t> recomputed;  // candidates neither kept nor offloaded, best value first
  for (size_t c : s.space.candidates)
    if (!s.best.keep[c] && !offloaded(s.best, c)) recomputed.push_back(c);
  const KeepSet start = with_offload_vector(s.best);
  auto prefix = [&](size_t k) {
    KeepSet set = start;
    for (size_t i = 0; i < k; ++i) set.offload[recomputed[i]] = true;
    return set;
  };
  // More offloaded: more host bytes and more device bytes before each release: the longest prefix
  // that fits, by binary search; every prefix priced on the way may become best.
  size_t lo = 0, hi = recomputed.size() + 1;  // prefix lo fits (the start), prefix hi is past the end
  while (hi - lo > 1 && s.budget_left()) {
    const size_t mid = lo + (hi - lo) / 2;
    const KeepSet set = prefix(mid);
    const RunResult r = s.pricer.price(set);
    if (fits(r, s.budget, s.host_budget)) {
      lo = mid;
      if (cheaper(r, s.best_run)) s.best = set, s.best_run = r;
    } else {
      hi = mid;
    }
  }
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

void offload_kept_then_first_fit(OffloadSearch& s) {
  KeepSet all = with_offload_vector(s.best);
  bool moves = false;
  for (size_t c : s.space.candidates)
    if (all.keep[c]) all.keep[c] = false, all.offload[c] = moves = true;
  if (!moves || !s.budget_left()) return;
  const RunResult r = s.pricer.price(all);
  if (!fits(r, s.budget, s.host_budget)) return;
  // From here even if it costs more than best: first fit may buy it back and more.
  OffloadSearch from_all{s.data, s.space, s.pricer, s.budget, s.host_budget, s.stop, all, r};
  offload_first_fit(from_all);
  if (cheaper(from_all.best_run, s.best_run)) s.best = from_all.best, s.best_run = from_all.best_run;
}

void search_offload(OffloadSearch& s, const std::function<void(const char*)>& phase) {
  phase("offload: the longest prefix of the recomputed candidates that fits");
  offload_prefix(s);
  phase("offload: first fit, one step up");
  offload_first_fit(s);
  phase("offload: every kept candidate offloaded, then first fit");
  offload_kept_then_first_fit(s);
}

}  // namespace remat::planner_detail
