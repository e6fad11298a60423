// The main table of bench/memory_vs_recompute: predicted beside measured memory per strategy, its
// preamble and the step times measured in turn (no PyTorch counterpart; see render.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace remat::bench {

using namespace render_internal;

namespace render_internal {

// Lines above the table: the model, its FLOPs, the reference formula, how the dry runs counted
// and how long they took.
std::vector<std::string> report_preamble(const RunConfig& cfg, const std::vector<StrategyResult>& results) {
  const ModelShape& m = cfg.shape;
  std::vector<std::string> lines;
  std::ostringstream model;
  model << (m.is_llama() ? "Llama: " : "GPT: ") << m.layers << " layers, d_model " << m.embd << ", " << m.heads
        << " heads";
  if (m.is_llama()) model << " (" << m.kv_heads_or_heads() << " kv), ffn " << m.ffn_hidden;
  model << ", seq " << m.seq << ", batch " << m.batch << ", vocab " << m.vocab << ", " << cfg.dtype << ", " << cfg.device;
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
  if (!m.is_llama()) {  // their formula is the GPT block's (its MLP of 4h, LayerNorm, dropout)
    std::snprintf(buf, sizeof buf, "Korthikanti et al. sbh(34+5as/h), 16-bit, all layers: %.1f MiB (reference only)",
                  korthikanti_bytes(m) / kMiB);
    lines.push_back(buf);
  }
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

}  // namespace render_internal

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
  double none_ms = 0, torch_none_ms = 0;
  bool beside = false;
  for (const StrategyResult& r : results) {
    if (r.name == "none") none_ms = r.interleaved_ms, torch_none_ms = r.beside_ms;
    beside = beside || r.beside_ms > 0;
  }
  if (beside) t.header.insert(t.header.end(), {"PyTorch ms in turn", "ratio", "PyTorch overhead"});
  for (const StrategyResult& r : results) {
    if (r.interleaved_ms <= 0) continue;
    t.rows.push_back({r.name, fmt("%.1f", r.interleaved_ms),
                      none_ms > 0 ? fmt("%.0f%%", (r.interleaved_ms / none_ms - 1) * 100) : "-",
                      fmt("%.1f", r.median_ms)});
    if (!beside) continue;
    const bool has = r.beside_ms > 0;
    t.rows.back().insert(t.rows.back().end(),
                         {has ? fmt("%.1f", r.beside_ms) : "-", has ? fmt("%.2f", r.interleaved_ms / r.beside_ms) : "-",
                          has && torch_none_ms > 0 ? fmt("%.0f%%", (r.beside_ms / torch_none_ms - 1) * 100) : "-"});
  }
  t.notes = {
      "in turn: every strategy above took one training step in turn (each round in the other order than the last),",
      "after the same warm-up; medians. A slow spell of a shared machine hits all alike, so these overheads are the",
      "ones to read; alone: the median of the strategy's own run (the main table's step ms).",
  };
  if (beside)
    t.notes.insert(t.notes.end(), {"PyTorch (--beside): its step of the same strategy right after each of remat's, in "
                                   "a child process;",
                                   "ratio: remat's median over PyTorch's (below 1: remat faster)."});
  return t;
}

}  // namespace remat::bench
