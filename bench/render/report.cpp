// Tables, JSON and the HTML report of bench/memory_vs_recompute (see render.h; the table helpers,
// internal.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace remat::bench {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

const StrategyResult* find(const std::vector<StrategyResult>& rs, const std::string& name) {
  for (const auto& r : rs)
    if (r.name == name) return &r;
  return nullptr;
}

bool any_measured(const std::vector<StrategyResult>& results) {
  return std::any_of(results.begin(), results.end(), [](const StrategyResult& r) { return r.measured.known; });
}

nlohmann::json by_category_json(const std::map<MemoryCategory, int64_t>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [c, bytes] : m) j[toString(c)] = bytes;
  return j;
}

// memory_allocated and memory_reserved after each event (a relabel's halves as one).
nlohmann::json timeline_json(const StepTimeline& t) {
  const CategoryStack s = stack_by_category(t);
  return {{"step", t.step}, {"allocated", s.allocated}, {"reserved", s.reserved}};
}

int64_t category(const std::map<MemoryCategory, int64_t>& m, MemoryCategory c) {
  auto it = m.find(c);
  return it == m.end() ? 0 : it->second;
}

bool any_planned(const std::vector<StrategyResult>& results) {
  return std::any_of(results.begin(), results.end(), [](const StrategyResult& r) { return r.planned(); });
}

std::string fits_text(const StrategyResult& r) { return r.planned() ? (r.fits() ? "yes" : "NO") : "-"; }

std::string mib(int64_t bytes, const char* f = "%.1f") { return fmt(f, static_cast<double>(bytes) / kMiB); }

// One result as results.json has it (fixed strategies, the planned row and sweep points alike).
nlohmann::json result_json(const StrategyResult& r) {
  nlohmann::json e = {{"strategy", r.name},
                      {"description", r.description},
                      {"reentrant", r.reentrant},
                      {"recomputed_flops_per_step", r.recomputed_flops_per_step},
                      {"recomputed_calls_per_step", r.recomputed_calls_per_step},
                      {"replayed_per_step", r.replayed_per_step}};
  if (r.measured.known) {
    e["peak_bytes"] = r.measured.peak_bytes;
    e["activation_bytes"] = r.measured.activation_bytes;
    e["peak_reserved_bytes"] = r.measured.peak_reserved_bytes;
    e["segments"] = r.measured.segments;
    e["at_peak"] = by_category_json(r.measured.at_peak);
    e["step_ms"] = r.step_ms;
    e["median_ms"] = r.median_ms;
    if (r.interleaved_ms > 0) e["interleaved_ms"] = r.interleaved_ms;
    e["final_loss"] = r.final_loss;
    if (!r.measured.timeline.empty())
      e["timeline"] = timeline_json(r.measured.timeline);
  }
  if (r.predicted.known) {
    e["predicted_peak_bytes"] = r.predicted.peak_bytes;
    e["predicted_activation_bytes"] = r.predicted.activation_bytes;
    e["predicted_peak_reserved_bytes"] = r.predicted.peak_reserved_bytes;
    e["predicted_segments"] = r.predicted.segments;
    e["predicted_at_peak"] = by_category_json(r.predicted.at_peak);
    e["dry_run_seconds"] = r.dry_run_seconds;
    if (!r.measured.known && !r.predicted.timeline.empty())
      e["predicted_timeline"] = timeline_json(r.predicted.timeline);
  }
  if (r.planned()) {
    e["budget_bytes"] = r.budget_bytes;
    e["fits"] = r.fits();
    e["plan_predicted_peak_bytes"] = r.plan_predicted_peak_bytes;
    e["plan_counter"] = r.plan_counter;
    e["plan_recompute_flops"] = r.plan_recompute_flops;
    e["plan_overhead_seconds"] = r.plan_overhead_seconds;
    e["plan_recompute_seconds"] = r.plan_recompute_seconds;
    e["planning_seconds"] = r.planning_seconds;
    e["planning_dry_runs"] = r.planning_dry_runs;
    if (r.plan_host_budget_bytes > 0) {
      e["plan_host_budget_bytes"] = r.plan_host_budget_bytes;
      e["plan_host_peak_bytes"] = r.plan_host_peak_bytes;
      e["plan_offloaded_bytes"] = r.plan_offloaded_bytes;
      e["plan_offloaded_calls"] = r.plan_offloaded_calls;
      e["plan_transfer_seconds"] = r.plan_transfer_seconds;
      e["plan_host_link_bandwidth"] = r.plan_host_link_bandwidth;
    }
    if (!r.at_strategy.empty()) e["at_strategy"] = r.at_strategy;
    for (const StrategyResult::PairedTiming& pt : r.paired)
      e["paired"].push_back({{"strategy", pt.strategy}, {"strategy_ms", pt.strategy_ms},
                             {"planned_ms", pt.planned_ms}, {"rounds", pt.rounds}});
  }
  return e;
}

// The sweep point planned at exactly `budget`, if any.
const StrategyResult* planned_at(const std::vector<StrategyResult>& sweep, int64_t budget) {
  for (const auto& p : sweep)
    if (p.budget_bytes == budget) return &p;
  return nullptr;
}

// Lines above the table: the model, its FLOPs, the reference formula, how the dry runs counted
// and how long they took.
std::vector<std::string> report_preamble(const RunConfig& cfg, const std::vector<StrategyResult>& results) {
  const ModelShape& m = cfg.shape;
  std::vector<std::string> lines;
  std::ostringstream model;
  model << "GPT: " << m.layers << " layers, d_model " << m.embd << ", " << m.heads << " heads, seq " << m.seq
        << ", batch " << m.batch << ", vocab " << m.vocab << ", " << cfg.dtype << ", " << cfg.device;
  if (cfg.attention != "math") model << ", attention " << cfg.attention;
  lines.push_back(model.str());
  if (cfg.device.find("emulated") != std::string::npos) {
    lines.push_back("emulated device: its step times are CPU times of the emulation, never GPU times");
  }
  char buf[256];
  std::snprintf(
      buf, sizeof buf, "matmul FLOPs per step: %.2f GFLOP (forward %.2f); one extra forward = %.2fx a step",
      cfg.model_flops_per_step / 1e9, cfg.forward_flops / 1e9,
      cfg.model_flops_per_step > 0 ? (cfg.model_flops_per_step + cfg.forward_flops) / cfg.model_flops_per_step : 0.0);
  lines.push_back(buf);
  std::snprintf(buf, sizeof buf, "Korthikanti et al. sbh(34+5as/h), 16-bit, all layers: %.1f MiB (reference only)",
                korthikanti_bytes(m) / kMiB);
  lines.push_back(buf);
  const StrategyResult* none = find(results, "none");
  if (cfg.fma_peak_gflops > 0 && cfg.dtype == "f32" && none != nullptr && none->median_ms > 0) {
    const double gflops = cfg.model_flops_per_step / (none->median_ms * 1e-3) / 1e9;
    std::snprintf(buf, sizeof buf,
                  "FP32 FMA peak measured in this run (%lld threads): %.0f GFLOP/s; the step without checkpointing "
                  "runs its matmul FLOPs at %.0f GFLOP/s, %.0f%% of it",
                  (long long)cfg.threads, cfg.fma_peak_gflops, gflops, 100.0 * gflops / cfg.fma_peak_gflops);
    lines.push_back(buf);
  }
  double dry_seconds = 0;
  for (const StrategyResult& r : results) dry_seconds += r.dry_run_seconds;
  std::snprintf(
      buf, sizeof buf,
      "dry runs on meta, counting as the %s allocator: %lld steps per strategy, %.1f s for all %zu strategies",
      cfg.meta_accounting.c_str(), (long long)(cfg.warmup + cfg.steps), dry_seconds, results.size());
  lines.push_back(buf);
  return lines;
}
}  // namespace

std::string ratio_text(int64_t measured, int64_t predicted) {
  if (predicted <= 0) return "-";
  if (measured == predicted) return "1.000";
  std::string r = fmt("%.3f", static_cast<double>(measured) / static_cast<double>(predicted));
  return r == "1.000" ? "~1.000" : r;
}


Table result_table(const RunConfig& cfg, const std::vector<StrategyResult>& results) {
  Table t;
  const bool planned = any_planned(results);
  const std::string fits_note =
      "fits: the planned row's peak is within its budget (--budget; planned by plan_checkpointing on dry runs).";
  const std::string steps = "steps " + std::to_string(cfg.warmup + 1) + "-" + std::to_string(cfg.warmup + cfg.steps);
  // Counting like CUDA, the caching allocator's reserved bytes and segments (the dry run runs its block logic).
  const bool reserved = cfg.meta_accounting == "cuda";
  const std::string reserved_note =
      "reserved: max_memory_reserved over a step (the CUDA caching allocator's segments, from an empty cache at the "
      "first step); segments: held after a step, the most.";
  if (any_measured(results)) {
    t.header = {"strategy", "peak MiB", "predicted", "ratio",     "act MiB",  "predicted",
                "ratio",    "step ms",  "overhead",  "recomp GF", "replayed", "final loss"};
    if (planned) t.header.push_back("fits");
    if (reserved) t.header.insert(t.header.begin() + 4, {"reserved MiB", "predicted", "ratio", "segments", "predicted"});
    const StrategyResult* none = find(results, "none");
    for (const StrategyResult& r : results) {
      double overhead = none != nullptr && none->median_ms > 0 ? r.median_ms / none->median_ms - 1.0 : 0.0;
      t.rows.push_back(
          {r.name, fmt("%.1f", r.measured.peak_bytes / kMiB),
           r.predicted.known ? fmt("%.1f", r.predicted.peak_bytes / kMiB) : "-",
           ratio_text(r.measured.peak_bytes, r.predicted.peak_bytes), fmt("%.1f", r.measured.activation_bytes / kMiB),
           r.predicted.known ? fmt("%.1f", r.predicted.activation_bytes / kMiB) : "-",
           ratio_text(r.measured.activation_bytes, r.predicted.activation_bytes), fmt("%.1f", r.median_ms),
           fmt("%.0f%%", std::round(overhead * 100.0) + 0.0), fmt("%.3f", r.recomputed_flops_per_step / 1e9),
           fmt("%.0f", r.replayed_per_step), fmt("%.6f", r.final_loss)});
      if (planned) t.rows.back().push_back(fits_text(r));
      if (reserved)
        t.rows.back().insert(t.rows.back().begin() + 4,
                             {fmt("%.1f", r.measured.peak_reserved_bytes / kMiB),
                              r.predicted.known ? fmt("%.1f", r.predicted.peak_reserved_bytes / kMiB) : "-",
                              ratio_text(r.measured.peak_reserved_bytes, r.predicted.peak_reserved_bytes),
                              std::to_string(r.measured.segments),
                              r.predicted.known ? std::to_string(r.predicted.segments) : "-"});
    }
    t.notes = {
        "peak: max_memory_allocated over a step, the highest of " + steps + " (after " + std::to_string(cfg.warmup) +
            " warm-up); act: allocated after forward minus before;",
        "predicted: the same steps as a dry run on the meta device (no kernels); ratio: measured / predicted (1.000:",
        "equal to the byte); recomp GF: GFLOP recomputed per step (matmuls 2mnk, others 1/element); replayed: op calls",
        "answered from the selective-checkpoint cache per step; overhead: median step time against 'none'.",
    };
    if (reserved) t.notes.push_back(reserved_note);
    if (planned) t.notes.push_back(fits_note);
    return t;
  }
  double top = 0;
  for (const StrategyResult& r : results) top = std::max(top, static_cast<double>(r.predicted.peak_bytes));
  const bool gib = top >= 8 * kGiB;
  const double unit = gib ? kGiB : kMiB;
  const char* u = gib ? "GiB" : "MiB";
  const char* f = gib ? "%.2f" : "%.1f";
  // Buffers and uncategorised bytes (a few, e.g. a scalar) get a column only where it would not read 0.
  auto other = [](const StrategyResult& r) {
    return category(r.predicted.at_peak, MemoryCategory::Buffer) + category(r.predicted.at_peak, MemoryCategory::Other);
  };
  const std::string zero = fmt(f, 0.0);
  const bool any_other = std::any_of(results.begin(), results.end(),
                                     [&](const StrategyResult& r) { return fmt(f, other(r) / unit) != zero; });
  t.header = {"strategy", std::string("peak ") + u, std::string("act ") + u, "params", "optim", "grads", "saved",
              "temps"};
  if (reserved) t.header.insert(t.header.begin() + 2, {std::string("reserved ") + u, "segments"});
  if (any_other) t.header.push_back("other");
  t.header.insert(t.header.end(), {"recomp GF", "replayed"});
  if (planned) t.header.push_back("fits");
  for (const StrategyResult& r : results) {
    const auto& p = r.predicted.at_peak;
    std::vector<std::string> row = {r.name,
                                    fmt(f, r.predicted.peak_bytes / unit),
                                    fmt(f, r.predicted.activation_bytes / unit),
                                    fmt(f, category(p, MemoryCategory::Parameter) / unit),
                                    fmt(f, category(p, MemoryCategory::OptimizerState) / unit),
                                    fmt(f, category(p, MemoryCategory::Gradient) / unit),
                                    fmt(f, category(p, MemoryCategory::Activation) / unit),
                                    fmt(f, category(p, MemoryCategory::Temporary) / unit)};
    if (reserved)
      row.insert(row.begin() + 2, {fmt(f, r.predicted.peak_reserved_bytes / unit), std::to_string(r.predicted.segments)});
    if (any_other) row.push_back(fmt(f, other(r) / unit));
    row.insert(row.end(), {fmt("%.3f", r.recomputed_flops_per_step / 1e9), fmt("%.0f", r.replayed_per_step)});
    if (planned) row.push_back(fits_text(r));
    t.rows.push_back(std::move(row));
  }
  t.notes = {
      "predicted by a dry run on the meta device (nothing computed): peak: max_memory_allocated over a step, the",
      "highest of " + steps + "; act: allocated after forward minus before; params, optim (AdamW's moments), grads,",
      std::string("saved (tensors kept for backward), temps") + (any_other ? ", other" : "") +
          ": the bytes at the peak (" + u + ") by category;",
      "recomp GF: GFLOP recomputed per step; replayed: op calls answered from the selective-checkpoint cache per step.",
  };
  if (reserved) t.notes.push_back(reserved_note);
  if (planned) t.notes.push_back(fits_note);
  return t;
}

std::string table_text(const Table& t) {
  std::vector<size_t> width(t.header.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  widen(t.header);
  for (const auto& row : t.rows) widen(row);
  std::ostringstream s;
  auto put = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::string pad(width[i] - cell.size(), ' ');
      if (i == 0)
        s << cell << pad;  // names left, figures right
      else
        s << "  " << pad << cell;
    }
    s << "\n";
  };
  put(t.header);
  for (const auto& row : t.rows) put(row);
  return s.str();
}

std::string table_html(const Table& t) {
  std::ostringstream s;
  s << "<table>\n<thead><tr>";
  for (const auto& h : t.header) s << "<th>" << escape_xml(h) << "</th>";
  s << "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    s << "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      std::string cls;
      if (i < t.header.size() && t.header[i] == "ratio" && row[i] != "-")
        cls = row[i] == "1.000" ? " class='ok'" : " class='off'";
      s << "<td" << cls << ">" << escape_xml(row[i]) << "</td>";
    }
    s << "</tr>\n";
  }
  s << "</tbody>\n</table>\n";
  // The notes are wrapped for a terminal: one paragraph here.
  std::string notes;
  for (const auto& n : t.notes) notes += (notes.empty() ? "" : " ") + n;
  if (!notes.empty()) s << "<p class='note'>" << escape_xml(notes) << "</p>\n";
  return s.str();
}

void print_table(const RunConfig& cfg, const std::vector<StrategyResult>& results) {
  std::printf("\n");
  for (const std::string& line : report_preamble(cfg, results)) std::printf("%s\n", line.c_str());
  Table t = result_table(cfg, results);
  std::printf("\n%s\n", table_text(t).c_str());
  for (const std::string& n : t.notes) std::printf("%s\n", n.c_str());
  Table in_turn = interleaved_table(results);
  if (in_turn.rows.empty()) return;
  std::printf("\nstep times, every strategy in turn:\n\n%s\n", table_text(in_turn).c_str());
  for (const std::string& n : in_turn.notes) std::printf("%s\n", n.c_str());
}

Table interleaved_table(const std::vector<StrategyResult>& results) {
  Table t;
  t.header = {"strategy", "step ms in turn", "overhead", "step ms alone"};
  double none_ms = 0;
  for (const StrategyResult& r : results)
    if (r.name == "none") none_ms = r.interleaved_ms;
  for (const StrategyResult& r : results) {
    if (r.interleaved_ms <= 0) continue;
    t.rows.push_back({r.name, fmt("%.1f", r.interleaved_ms),
                      none_ms > 0 ? fmt("%.0f%%", (r.interleaved_ms / none_ms - 1) * 100) : "-",
                      fmt("%.1f", r.median_ms)});
  }
  t.notes = {
      "in turn: every strategy above took one training step in turn (each round in the other order than the last),",
      "after the same warm-up; medians. A slow spell of a shared machine hits all alike, so these overheads are the",
      "ones to read; alone: the median of the strategy's own run (the main table's step ms).",
  };
  return t;
}

std::string planning_line(const StrategyResult& p) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s: planned for a budget of %s MiB (%lld bytes) of %s memory in %.2f s, %lld dry runs: predicted "
                "peak %s MiB, %.3f GFLOP recomputed per step",
                p.name.c_str(), mib(p.budget_bytes, "%.2f").c_str(), (long long)p.budget_bytes, p.plan_counter.c_str(),
                p.planning_seconds, (long long)p.planning_dry_runs, mib(p.plan_predicted_peak_bytes, "%.2f").c_str(),
                p.plan_recompute_flops / 1e9);
  return buf;
}

Table sweep_table(const std::vector<StrategyResult>& sweep) {
  Table t;
  const bool at = std::any_of(sweep.begin(), sweep.end(), [](const StrategyResult& r) { return !r.at_strategy.empty(); });
  t.header = {"plan", "budget MiB", "predicted", "measured", "fits", "recomp GF", "est ms", "step ms", "plan s"};
  if (at) t.header.push_back("at the peak of");
  for (const StrategyResult& r : sweep) {
    t.rows.push_back({r.name, mib(r.budget_bytes, "%.2f"), mib(r.plan_predicted_peak_bytes, "%.2f"),
                      r.measured.known ? mib(r.measured_plan_peak(), "%.2f") : "-", fits_text(r),
                      fmt("%.3f", r.recomputed_flops_per_step / 1e9), fmt("%.1f", r.plan_overhead_seconds * 1e3),
                      r.measured.known ? fmt("%.1f", r.median_ms) : "-",
                      fmt("%.2f", r.planning_seconds)});
    if (at) t.rows.back().push_back(r.at_strategy.empty() ? "-" : r.at_strategy);
  }
  t.notes = {
      "budget: what plan_checkpointing was given; predicted: the plan's dry-run peak; measured: the same counter over",
      "the measured steps (max_memory_reserved for a plan of reserved bytes, else allocated); fits: measured <= budget; recomp GF: GFLOP recomputed per step (measured); est ms:",
      "the planner's price of that recompute per step (what it minimises); step ms: median step time, the same steps",
      "as the strategies'; plan s: wall time of plan_checkpointing.",
  };
  return t;
}

Table comparison_table(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep) {
  Table t;
  t.header = {"strategy", "peak MiB", "strategy ms", "planned ms", "ratio", "paired: strategy ms", "planned ms",
              "ratio", "strategy GF", "planned GF"};
  for (const StrategyResult& r : results) {
    if (r.planned() || !r.measured.known) continue;
    const StrategyResult* p = planned_at(sweep, r.measured.peak_bytes);
    if (p == nullptr) continue;
    std::vector<std::string> paired = {"-", "-", "-"};
    for (const StrategyResult::PairedTiming& pt : p->paired)
      if (pt.strategy == r.name && pt.strategy_ms > 0)
        paired = {fmt("%.1f", pt.strategy_ms), fmt("%.1f", pt.planned_ms), fmt("%.3f", pt.planned_ms / pt.strategy_ms)};
    t.rows.push_back({r.name, mib(r.measured.peak_bytes), fmt("%.1f", r.median_ms),
                      p->measured.known ? fmt("%.1f", p->median_ms) : "-",
                      p->measured.known && r.median_ms > 0 ? fmt("%.3f", p->median_ms / r.median_ms) : "-", paired[0],
                      paired[1], paired[2], fmt("%.3f", r.recomputed_flops_per_step / 1e9),
                      fmt("%.3f", p->recomputed_flops_per_step / 1e9)});
  }
  t.notes = {
      "planned: plan_checkpointing given the strategy's own measured peak as its budget, run the same way;",
      "ratio: planned / strategy median step time (at most 1.03: the plan is no slower, 3% noise allowed);",
      "paired: the two step by step in turn in one process (a slow spell hits both), medians; the fairer test.",
  };
  return t;
}


std::string offload_caveat(const RunConfig& cfg) {
  if (cfg.device.find("emulated") != std::string::npos)
    return "modeled, not measured: the emulated device has no real link";
  if (cfg.dry_run) return "modeled, not measured: a dry run moves no bytes";
  return "transfer times modeled at the planner's host link bandwidth; peaks and step times measured";
}

Table offload_table(const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& offload) {
  Table t;
  t.header = {"budget MiB", "peak MiB",    "+off peak", "+off measured", "recomp us", "cost us",  "+off recomp",
              "transfer us", "+off cost us", "host peak MiB", "offloaded MiB", "calls", "saved", "step ms",
              "+off step ms"};
  auto us = [](double seconds) { return fmt("%.1f", seconds * 1e6); };
  double bandwidth = 0;
  for (const StrategyResult& o : offload) {
    const StrategyResult* p = planned_at(sweep, o.budget_bytes);
    bandwidth = o.plan_host_link_bandwidth;
    t.rows.push_back({mib(o.budget_bytes, "%.2f"), p ? mib(p->plan_predicted_peak_bytes, "%.2f") : "-",
                      mib(o.plan_predicted_peak_bytes, "%.2f"), o.measured.known ? mib(o.measured_plan_peak(), "%.2f") : "-",
                      p ? us(p->plan_recompute_seconds) : "-", p ? us(p->plan_overhead_seconds) : "-",
                      us(o.plan_recompute_seconds), us(o.plan_transfer_seconds), us(o.plan_overhead_seconds),
                      mib(o.plan_host_peak_bytes, "%.2f"), mib(o.plan_offloaded_bytes, "%.2f"),
                      std::to_string(o.plan_offloaded_calls),
                      p && p->plan_overhead_seconds > 0
                          ? fmt("%.0f%%", (1 - o.plan_overhead_seconds / p->plan_overhead_seconds) * 100)
                          : "-",
                      p && p->measured.known ? fmt("%.1f", p->median_ms) : "-",
                      o.measured.known ? fmt("%.1f", o.median_ms) : "-"});
  }
  t.notes = {
      "each device budget planned twice: keep/recompute (peak, recomp, cost) and keep/recompute/offload (+off);",
      "peak: the plan's predicted device peak of " + (offload.empty() ? std::string("allocated") : offload[0].plan_counter) +
          " memory (the dry run's, what a real step shows);",
      "+off measured: the offload plan's measured device peak of the same (- after --dry-run); recomp us: the",
      "planner's price of the recompute per step, in microseconds;",
      "transfer us: the modeled transfer time compute does not hide (checkpoint/offload_cost.h), at " +
          fmt("%.1f", bandwidth / 1e9) + " GB/s each way;",
      "cost us: recompute + exposed transfer (CheckpointPlan::predicted_cost_seconds, what the planner minimises);",
      "host peak: pinned host bytes held at once; offloaded: bytes copied to host and back per step, in `calls` op",
      "outputs; saved: the offload plan's cost below the keep/recompute plan's; step ms: the measured median step",
      "times of the two plans (- after --dry-run; on the emulated device CPU time, its copies no real link's).",
  };
  return t;
}

void print_offload(const RunConfig& cfg, const std::vector<StrategyResult>& sweep,
                   const std::vector<StrategyResult>& offload) {
  if (offload.empty()) return;
  Table t = offload_table(sweep, offload);
  std::printf("\nkeep/recompute against keep/recompute/offload (--offload %s of host memory); %s:\n\n%s\n",
              byte_size_text(cfg.offload_bytes).c_str(), offload_caveat(cfg).c_str(), table_text(t).c_str());
  for (const std::string& n : t.notes) std::printf("%s\n", n.c_str());
  if (!cfg.host_link_source.empty())
    std::printf("the host link's bandwidth: %.1f GB/s each way (%s; the datasheet's: %.1f GB/s)\n",
                offload.front().plan_host_link_bandwidth / 1e9, cfg.host_link_source.c_str(),
                cfg.host_link_datasheet / 1e9);
}

void print_sweep(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep) {
  if (sweep.empty()) return;
  Table s = sweep_table(sweep);
  std::printf("\nthe planned frontier:\n\n%s\n", table_text(s).c_str());
  for (const std::string& n : s.notes) std::printf("%s\n", n.c_str());
  Table c = comparison_table(results, sweep);
  if (c.rows.empty()) return;
  std::printf("\nplanned at each strategy's own peak:\n\n%s\n", table_text(c).c_str());
  for (const std::string& n : c.notes) std::printf("%s\n", n.c_str());
}

std::string to_json(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                    const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& offload) {
  nlohmann::json j;
  j["framework"] = cfg.framework;
  j["config"] = {{"layers", cfg.shape.layers},
                 {"embd", cfg.shape.embd},
                 {"heads", cfg.shape.heads},
                 {"seq", cfg.shape.seq},
                 {"batch", cfg.shape.batch},
                 {"vocab", cfg.shape.vocab},
                 {"device", cfg.device},
                 {"dtype", cfg.dtype},
                 {"attention", cfg.attention},
                 {"steps", cfg.steps},
                 {"warmup", cfg.warmup},
                 {"model_flops_per_step", cfg.model_flops_per_step},
                 {"forward_flops", cfg.forward_flops},
                 {"dry_run", cfg.dry_run},
                 {"meta_accounting", cfg.meta_accounting},
                 {"threads", cfg.threads},
                 {"clock", cfg.clock},
                 {"fma_peak_gflops", cfg.fma_peak_gflops}};
  if (cfg.offload_bytes > 0) j["config"]["offload_bytes"] = cfg.offload_bytes;
  if (!cfg.host_link_source.empty()) j["config"]["host_link_source"] = cfg.host_link_source;
  j["results"] = nlohmann::json::array();
  for (const StrategyResult& r : results) j["results"].push_back(result_json(r));
  if (!sweep.empty()) {
    j["sweep"] = nlohmann::json::array();
    for (const StrategyResult& r : sweep) j["sweep"].push_back(result_json(r));
  }
  if (!offload.empty()) {
    nlohmann::json o = {{"host_budget_bytes", cfg.offload_bytes},
                        {"host_link_bandwidth", offload.front().plan_host_link_bandwidth},
                        {"host_link_source", cfg.host_link_source},
                        {"host_link_datasheet_bandwidth", cfg.host_link_datasheet},
                        {"caveat", offload_caveat(cfg)},
                        {"sweep", nlohmann::json::array()},
                        {"rows", nlohmann::json::array()}};
    auto plan_json = [](const StrategyResult& r) {
      return nlohmann::json{{"plan", r.name},
                            {"counter", r.plan_counter},
                            {"predicted_peak_bytes", r.plan_predicted_peak_bytes},
                            {"recompute_seconds", r.plan_recompute_seconds},
                            {"transfer_seconds", r.plan_transfer_seconds},
                            {"cost_seconds", r.plan_overhead_seconds},
                            {"host_peak_bytes", r.plan_host_peak_bytes},
                            {"offloaded_bytes", r.plan_offloaded_bytes}};
    };
    for (const StrategyResult& r : offload) {
      o["sweep"].push_back(result_json(r));
      nlohmann::json row = {{"budget_bytes", r.budget_bytes}, {"offload", plan_json(r)}};
      if (r.measured.known) row["offload"]["measured_peak_bytes"] = r.measured_plan_peak();
      if (const StrategyResult* p = planned_at(sweep, r.budget_bytes)) row["keep_recompute"] = plan_json(*p);
      o["rows"].push_back(row);
    }
    j["offload"] = o;
  }
  return j.dump(1);
}

void from_json(const std::string& text, RunConfig* cfg, std::vector<StrategyResult>* results) {
  nlohmann::json j = nlohmann::json::parse(text);
  cfg->framework = j.value("framework", std::string("?"));
  const auto& c = j.at("config");
  cfg->shape = ModelShape{c.at("batch"), c.at("seq"), c.at("embd"), c.at("heads"), c.at("vocab"), c.at("layers")};
  cfg->device = c.value("device", std::string("cpu"));
  cfg->dtype = c.value("dtype", std::string("f32"));
  cfg->attention = c.value("attention", std::string("math"));  // files written before --attention/--sdpa: math
  cfg->steps = c.value("steps", int64_t{0});
  cfg->warmup = c.value("warmup", int64_t{0});
  cfg->threads = c.value("threads", int64_t{0});
  cfg->clock = c.value("clock", std::string("wall"));
  cfg->fma_peak_gflops = c.value("fma_peak_gflops", 0.0);
  cfg->model_flops_per_step = c.value("model_flops_per_step", 0.0);
  cfg->forward_flops = c.value("forward_flops", 0.0);
  cfg->dry_run = c.value("dry_run", false);
  cfg->meta_accounting = c.value("meta_accounting", std::string("cpu"));
  cfg->offload_bytes = c.value("offload_bytes", int64_t{0});
  cfg->host_link_source = c.value("host_link_source", std::string());
  for (const auto& r : j.at("results")) {
    StrategyResult s;
    s.name = r.at("strategy");
    s.description = r.value("description", std::string());
    s.reentrant = r.value("reentrant", false);
    s.measured.known = r.contains("peak_bytes") || r.contains("activation_bytes");
    s.measured.peak_bytes = r.value("peak_bytes", int64_t{0});
    s.measured.activation_bytes = r.value("activation_bytes", int64_t{0});
    s.measured.peak_reserved_bytes = r.value("peak_reserved_bytes", int64_t{0});
    s.measured.segments = r.value("segments", int64_t{0});
    s.median_ms = r.value("median_ms", 0.0);
    s.final_loss = r.value("final_loss", 0.0);
    s.predicted.known = r.contains("predicted_peak_bytes");
    s.predicted.peak_bytes = r.value("predicted_peak_bytes", int64_t{0});
    s.predicted.activation_bytes = r.value("predicted_activation_bytes", int64_t{0});
    s.predicted.peak_reserved_bytes = r.value("predicted_peak_reserved_bytes", int64_t{0});
    s.predicted.segments = r.value("predicted_segments", int64_t{0});
    s.dry_run_seconds = r.value("dry_run_seconds", 0.0);
    s.recomputed_flops_per_step = r.value("recomputed_flops_per_step", 0.0);
    s.replayed_per_step = r.value("replayed_per_step", 0.0);
    s.budget_bytes = r.value("budget_bytes", int64_t{0});
    s.plan_predicted_peak_bytes = r.value("plan_predicted_peak_bytes", int64_t{0});
    s.plan_counter = r.value("plan_counter", std::string("allocated"));
    s.plan_recompute_flops = r.value("plan_recompute_flops", 0.0);
    s.plan_overhead_seconds = r.value("plan_overhead_seconds", 0.0);
    s.plan_recompute_seconds = r.value("plan_recompute_seconds", 0.0);
    s.plan_host_budget_bytes = r.value("plan_host_budget_bytes", int64_t{0});
    s.plan_host_peak_bytes = r.value("plan_host_peak_bytes", int64_t{0});
    s.plan_offloaded_bytes = r.value("plan_offloaded_bytes", int64_t{0});
    s.plan_offloaded_calls = r.value("plan_offloaded_calls", int64_t{0});
    s.plan_transfer_seconds = r.value("plan_transfer_seconds", 0.0);
    s.plan_host_link_bandwidth = r.value("plan_host_link_bandwidth", 0.0);
    s.planning_seconds = r.value("planning_seconds", 0.0);
    results->push_back(s);
  }
}

std::string report_html(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                        const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& offload) {
  std::ostringstream s;
  const bool measured = any_measured(results);
  s << "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
    << "<title>remat: memory against recompute</title>\n<style>\n"
    << "body { font-family: 'DejaVu Sans', Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1360px; "
       "color: #222; }\n"
    << "h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }\n"
    << "table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }\n"
    << "th, td { padding: 3px 8px; text-align: right; border-bottom: 1px solid #ddd; white-space: nowrap; }\n"
    << "th:first-child, td:first-child { text-align: left; }\n"
    << "th { background: #f3f3f3; } td.ok { color: #1a7f37; } td.off { color: #c62828; font-weight: bold; }\n"
    << "p.note { font-size: 12px; color: #555; margin: 2px 0; } p.pre { font-family: monospace; margin: 2px 0; }\n"
    << "figure { margin: 16px 0; } svg { max-width: 100%; height: auto; border: 1px solid #eee; }\n"
    << "dt { font-family: monospace; font-weight: bold; } dd { margin: 0 0 4px 20px; font-size: 13px; }\n"
    << "</style>\n</head>\n<body>\n";
  s << "<h1>remat: memory against recompute" << (measured ? "" : " (dry run)") << "</h1>\n";
  for (const std::string& line : report_preamble(cfg, results)) s << "<p class='pre'>" << escape_xml(line) << "</p>\n";
  s << "<h2>" << (measured ? "Predicted and measured memory" : "Predicted memory") << "</h2>\n";
  s << table_html(result_table(cfg, results));
  if (!interleaved_table(results).rows.empty())
    s << "<h2>Step times, every strategy in turn</h2>\n" << table_html(interleaved_table(results));
  if (measured) {
    s << "<h2>Peak memory against step time</h2>\n<figure>\n"
      << pareto_svg(cfg, results, sweep, ParetoX::kStepTime, offload) << "</figure>\n";
    s << "<h2>Peak memory against recomputed FLOPs</h2>\n<figure>\n"
      << pareto_svg(cfg, results, sweep, ParetoX::kRecomputedFlops, offload) << "</figure>\n";
  }
  for (const StrategyResult& r : results)
    if (r.planned())
      s << "<p class='pre'>" << escape_xml(planning_line(r)) << "</p>\n";
  if (!sweep.empty()) {
    s << "<h2>The planned frontier</h2>\n" << table_html(sweep_table(sweep));
    Table c = comparison_table(results, sweep);
    if (!c.rows.empty()) s << "<h2>Planned at each strategy's own peak</h2>\n" << table_html(c);
  }
  if (!offload.empty()) {
    s << "<h2>Keep/recompute against keep/recompute/offload (" << escape_xml(offload_caveat(cfg)) << ")</h2>\n"
      << "<p class='pre'>--offload " << escape_xml(byte_size_text(cfg.offload_bytes))
      << " of pinned host memory; each device budget planned with and without it; the host link: "
      << fmt("%.1f", offload.front().plan_host_link_bandwidth / 1e9) << " GB/s each way"
      << (cfg.host_link_source.empty() ? "" : " (" + escape_xml(cfg.host_link_source) + ")") << "</p>\n"
      << table_html(offload_table(sweep, offload)) << "<figure>\n"
      << modeled_cost_svg(cfg, sweep, offload) << "</figure>\n";
  }
  s << "<h2>Memory over one training step</h2>\n";
  for (const StrategyResult& r : results) {
    if (r.measured.timeline.empty() && r.predicted.timeline.empty()) continue;
    s << "<figure id='timeline-" << escape_xml(r.name) << "'>\n" << timeline_svg(cfg, r) << "</figure>\n";
  }
  s << "<h2>Strategies</h2>\n<dl>\n";
  for (const StrategyResult& r : results)
    s << "<dt>" << escape_xml(r.name) << "</dt><dd>" << escape_xml(r.description) << "</dd>\n";
  s << "</dl>\n<p class='note'>Written by bench/memory_vs_recompute.</p>\n</body>\n</html>\n";
  return s.str();
}

void print_comparison(const RunConfig& ours_cfg, const std::vector<StrategyResult>& ours, const RunConfig& theirs_cfg,
                      const std::vector<StrategyResult>& theirs) {
  auto threads = [](const RunConfig& c) {
    return (c.threads > 0 ? std::to_string(c.threads) + " thread(s)" : std::string("threads not recorded")) + ", " +
           c.clock + " time";
  };
  std::printf("\nremat (%s, %s) vs %s (%s, %s, %s): %lld layers, d_model %lld, seq %lld, batch %lld\n",
              ours_cfg.dtype.c_str(), threads(ours_cfg).c_str(), theirs_cfg.framework.c_str(), theirs_cfg.device.c_str(),
              theirs_cfg.dtype.c_str(), threads(theirs_cfg).c_str(), (long long)theirs_cfg.shape.layers,
              (long long)theirs_cfg.shape.embd, (long long)theirs_cfg.shape.seq, (long long)theirs_cfg.shape.batch);
  if (ours_cfg.dtype != theirs_cfg.dtype || ours_cfg.device != theirs_cfg.device || ours_cfg.clock != theirs_cfg.clock) {
    std::printf("warning: the two runs used different dtypes, devices or clocks; ratios compare unlike things\n");
  }
  std::printf("attention: remat %s, %s %s\n", ours_cfg.attention.c_str(), theirs_cfg.framework.c_str(),
              theirs_cfg.attention.c_str());
  if (ours_cfg.attention != theirs_cfg.attention) {
    std::printf("warning: the two runs used different attention (math, sdpa); ratios compare unlike things\n");
  }
  if (ours_cfg.shape.layers != theirs_cfg.shape.layers || ours_cfg.shape.embd != theirs_cfg.shape.embd ||
      ours_cfg.shape.seq != theirs_cfg.shape.seq || ours_cfg.shape.batch != theirs_cfg.shape.batch) {
    std::printf("warning: the two runs used different model sizes; ratios compare unlike things\n");
  }
  std::printf("%-15s %11s %11s %7s %11s %11s %7s\n", "strategy", "remat MiB", "other MiB", "ratio", "remat ms",
              "other ms", "ratio");
  for (const auto& r : ours) {
    const StrategyResult* t = find(theirs, r.name);
    if (t == nullptr) {
      std::printf("%-15s %11.1f %11s %7s %11.1f %11s %7s\n", r.name.c_str(), r.measured.activation_bytes / kMiB, "-",
                  "-", r.median_ms, "-", "-");
      continue;
    }
    std::printf(
        "%-15s %11.1f %11.1f %7.2f %11.1f %11.1f %7.2f\n", r.name.c_str(), r.measured.activation_bytes / kMiB,
        t->measured.activation_bytes / kMiB,
        t->measured.activation_bytes > 0 ? r.measured.activation_bytes / double(t->measured.activation_bytes) : 0.0,
        r.median_ms, t->median_ms, t->median_ms > 0 ? r.median_ms / t->median_ms : 0.0);
  }
  std::printf("ratio: remat / other (below 1: remat uses less memory or time)\n");
}

}  // namespace remat::bench
