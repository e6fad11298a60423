// The HTML report of bench/memory_vs_recompute, and the comparison with another framework's
// results (no PyTorch counterpart; see render.h).
#include "bench/render/internal.h"

#include <cstdio>
#include <sstream>

namespace remat::bench {

using namespace render_internal;

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
