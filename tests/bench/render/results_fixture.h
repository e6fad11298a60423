// Results for tests/bench/render/*_test.cpp (no PyTorch counterpart): a tiny model's
// configuration, strategies measured on the CPU and predicted on Meta, and synthetic figures
// shaped like config A's (with a sweep of planned points).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "bench/render/render.h"
#include "bench/strategy_result.h"
#include "bench/training_step.h"

namespace remat::bench::render_testing {

// batch, seq, embd, heads, vocab, layers
inline const ModelShape kTiny{2, 8, 16, 2, 11, 2};

inline RunConfig tiny_config() {
  RunConfig cfg;
  cfg.shape = kTiny;
  cfg.steps = 2;
  cfg.warmup = 1;
  return cfg;
}

// A strategy measured on the CPU and predicted on Meta, timelines kept (three steps).
inline StrategyResult measured_result(const Strategy& s) {
  TrainingOptions o;
  o.keep_timeline = true;
  // The op-sequence AdamW: its temporaries put an optimizer phase on every step's timeline
  // (the fused one allocates nothing once its state exists).
  o.fused_adamw = false;
  StrategyResult r;
  r.name = s.name;
  r.description = s.description;
  record_predicted(run_training_steps(s, kTiny, Device{kMeta}, 3, o), 1, 0.01, &r);
  record_measured(run_training_steps(s, kTiny, Device{kCPU}, 3, o), 1, &r);
  return r;
}

// Eight strategies with figures like config A's: two pairs of points close together.
inline std::vector<StrategyResult> synthetic_results() {
  const std::vector<std::tuple<const char*, double, double>> points = {
      {"none", 431.4, 115.2},      {"full", 568.7, 70.1},         {"full-reentrant", 574.8, 71.1},
      {"every2", 497.0, 83.1},     {"sac-mm", 492.0, 101.1},      {"sac-titan", 507.9, 88.1},
      {"sac-no-fc2", 446.4, 97.1}, {"sac-megatron", 555.0, 106.1}};
  std::vector<StrategyResult> rs;
  for (const auto& [name, ms, mib] : points) {
    StrategyResult r;
    r.name = name;
    r.measured.known = r.predicted.known = true;
    r.median_ms = ms;
    r.measured.peak_bytes = r.predicted.peak_bytes = static_cast<int64_t>(mib * 1024 * 1024);
    r.measured.activation_bytes = r.predicted.activation_bytes = r.measured.peak_bytes / 2;
    rs.push_back(r);
  }
  return rs;
}

// Four planned points between full's and none's peaks, as a sweep measures them; the first was
// planned at full's own peak (--sweep-at-strategies).
inline std::vector<StrategyResult> synthetic_sweep(const std::vector<StrategyResult>& strategies) {
  const std::vector<std::tuple<double, double, double>> points = {
      {70.1, 520.0, 3.1e9}, {85.0, 470.0, 0.9e9}, {100.0, 450.0, 0.2e9}, {115.0, 432.0, 0.0}};
  std::vector<StrategyResult> sweep;
  for (const auto& [mib, ms, flops] : points) {
    StrategyResult r;
    r.budget_bytes = static_cast<int64_t>(mib * 1024 * 1024);
    r.name = "plan@" + std::to_string(r.budget_bytes);
    r.measured.known = r.predicted.known = true;
    r.measured.peak_bytes = r.predicted.peak_bytes = r.plan_predicted_peak_bytes = r.budget_bytes - 4096;
    r.median_ms = ms;
    r.recomputed_flops_per_step = r.plan_recompute_flops = flops;
    r.plan_overhead_seconds = r.plan_recompute_seconds = flops / 50e9;  // the planner's price: 62.0 ms at 3.1 GFLOP
    r.planning_seconds = 0.5;
    sweep.push_back(r);
  }
  sweep[0].budget_bytes = strategies.at(1).measured.peak_bytes;
  sweep[0].at_strategy = strategies.at(1).name;
  sweep[0].paired = {{strategies.at(1).name, 560.0, 532.0, 10}};
  return sweep;
}

// The plans at the same budgets that may also offload (--offload 32 MiB): a third of each
// plan's recompute moved to the link instead, priced at 50 GB/s; the last (keep-all) offloads
// nothing.
inline std::vector<StrategyResult> synthetic_offload_sweep(const std::vector<StrategyResult>& sweep) {
  std::vector<StrategyResult> offload;
  for (const StrategyResult& p : sweep) {
    StrategyResult r = p;
    r.name = "plan+offload@" + std::to_string(r.budget_bytes);
    r.at_strategy.clear();
    r.paired.clear();
    r.plan_host_budget_bytes = int64_t{32} << 20;
    r.plan_offloaded_bytes = static_cast<int64_t>(p.plan_recompute_flops / 1e3);
    r.plan_offloaded_calls = r.plan_offloaded_bytes > 0 ? 3 : 0;
    r.plan_host_peak_bytes = r.plan_offloaded_bytes / 2;
    r.plan_host_link_bandwidth = 50e9;
    r.plan_recompute_seconds = p.plan_recompute_seconds * 2 / 3;
    r.plan_transfer_seconds = p.plan_recompute_seconds / 6;  // half of what it no longer recomputes
    r.plan_overhead_seconds = r.plan_recompute_seconds + r.plan_transfer_seconds;
    r.recomputed_flops_per_step = r.plan_recompute_flops = p.plan_recompute_flops * 2 / 3;
    r.measured.peak_bytes = r.predicted.peak_bytes = r.plan_predicted_peak_bytes = p.plan_predicted_peak_bytes - (2 << 20);
    r.median_ms = p.median_ms - 5;
    offload.push_back(r);
  }
  return offload;
}

inline RunConfig emulated_cuda_config() {
  RunConfig cfg = tiny_config();
  cfg.device = "cuda (emulated)";
  cfg.meta_accounting = "cuda";
  cfg.offload_bytes = int64_t{32} << 20;
  cfg.host_link_source = "PCIe 5.0 x16 datasheet (emulated device: no link)";
  return cfg;
}

// How often `needle` occurs in `haystack`.
inline size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace remat::bench::render_testing
