// Measured and predicted figures of one strategy, from its training steps (see strategy_result.h).
#include "bench/strategy_result.h"

#include <algorithm>

namespace remat::bench {

namespace {

struct Recompute {
  double flops = 0, replayed = 0, recomputed = 0;  // per step
};

// The steps after warm-up: their memory, and their recompute accounting.
StepsMemory summarize(const std::vector<StepRecord>& steps, int64_t warmup, Recompute* recompute) {
  REMAT_CHECK(warmup >= 0 && static_cast<size_t>(warmup) < steps.size(), "memory_vs_recompute: ", steps.size(),
              " steps leave none after a warm-up of ", warmup);
  StepsMemory m;
  m.known = true;
  const auto counted = static_cast<double>(steps.size() - static_cast<size_t>(warmup));
  for (size_t i = static_cast<size_t>(warmup); i < steps.size(); ++i) {
    const StepRecord& st = steps[i];
    if (st.peak_bytes > m.peak_bytes) {
      m.peak_bytes = st.peak_bytes;
      m.at_peak = st.at_peak;
    }
    m.activation_bytes = std::max(m.activation_bytes, st.activation_bytes);
    m.peak_reserved_bytes = std::max(m.peak_reserved_bytes, st.peak_reserved_bytes);
    m.segments = std::max(m.segments, st.segments);
    recompute->flops += st.checkpoint.total.flops_recomputed / counted;
    recompute->replayed += static_cast<double>(st.checkpoint.total.ops_replayed) / counted;
    recompute->recomputed += static_cast<double>(st.checkpoint.total.ops_recomputed) / counted;
  }
  const StepRecord& last = steps.back();
  m.timeline = StepTimeline{static_cast<int64_t>(steps.size()) - 1, last.start_by_category, last.timeline};
  return m;
}

void set_recompute(const Recompute& c, StrategyResult* r) {
  r->recomputed_flops_per_step = c.flops;
  r->replayed_per_step = c.replayed;
  r->recomputed_calls_per_step = c.recomputed;
}

}  // namespace

double median_of(std::vector<double> values) {
  REMAT_CHECK(!values.empty(), "median_of: no values");
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void record_measured(const std::vector<StepRecord>& steps, int64_t warmup, StrategyResult* r) {
  Recompute c;
  r->measured = summarize(steps, warmup, &c);
  set_recompute(c, r);
  r->step_ms.clear();
  for (size_t i = static_cast<size_t>(warmup); i < steps.size(); ++i) r->step_ms.push_back(steps[i].seconds * 1e3);
  r->median_ms = median_of(r->step_ms);
  r->final_loss = steps.back().loss;
}

void record_predicted(const std::vector<StepRecord>& steps, int64_t warmup, double seconds, StrategyResult* r) {
  Recompute c;
  r->predicted = summarize(steps, warmup, &c);
  r->dry_run_seconds = seconds;
  if (!r->measured.known) set_recompute(c, r);
}

}  // namespace remat::bench
