// Table, JSON and SVG output of bench/memory_vs_recompute.
#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace remat::bench {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

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

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}
}  // namespace

void print_table(const RunConfig& cfg, const std::vector<StrategyResult>& results) {
  const ModelShape& m = cfg.shape;
  std::printf("\nGPT: %lld layers, d_model %lld, %lld heads, seq %lld, batch %lld, vocab %lld, %s, %s\n",
              (long long)m.layers, (long long)m.embd, (long long)m.heads, (long long)m.seq, (long long)m.batch,
              (long long)m.vocab, cfg.dtype.c_str(), cfg.device.c_str());
  std::printf("matmul FLOPs per step: %.2f GFLOP (forward %.2f); one extra forward = %.2fx a step\n",
              cfg.model_flops_per_step / 1e9, cfg.forward_flops / 1e9,
              (cfg.model_flops_per_step + cfg.forward_flops) / cfg.model_flops_per_step);
  std::printf("Korthikanti et al. sbh(34+5as/h), 16-bit, all layers: %.1f MiB (reference only)\n\n",
              korthikanti_bytes(m) / kMiB);
  const StrategyResult* none = find(results, "none");
  std::printf("%-15s %9s %9s %9s %6s %9s %8s %10s %9s %12s\n", "strategy", "peak MiB", "act MiB", "pred MiB",
              "act/pr", "step ms", "overhead", "recomp GF", "replayed", "final loss");
  for (const StrategyResult& r : results) {
    double overhead = none != nullptr && none->median_ms > 0 ? r.median_ms / none->median_ms - 1.0 : 0.0;
    std::printf("%-15s %9.1f %9.1f %9.1f %6.3f %9.1f %7.0f%% %10.3f %9.0f %12.6f\n", r.name.c_str(),
                r.peak_bytes / kMiB, r.activation_bytes / kMiB, r.predicted_bytes / kMiB,
                r.predicted_bytes > 0 ? r.activation_bytes / r.predicted_bytes : 0.0, r.median_ms,
                overhead * 100.0, r.recomputed_flops_per_step / 1e9, r.replayed_per_step, r.final_loss);
  }
  std::printf("\nact: allocated after forward minus before; pred: bench/activation_model.h; recomp GF: "
              "GFLOP recomputed per step (matmuls 2mnk, others 1/element); replayed: op calls answered\n"
              "from the selective-checkpoint cache per step; overhead: median step time against 'none'.\n");
}

std::string to_json(const RunConfig& cfg, const std::vector<StrategyResult>& results) {
  nlohmann::json j;
  j["framework"] = cfg.framework;
  j["config"] = {{"layers", cfg.shape.layers}, {"embd", cfg.shape.embd},    {"heads", cfg.shape.heads},
                 {"seq", cfg.shape.seq},       {"batch", cfg.shape.batch},  {"vocab", cfg.shape.vocab},
                 {"device", cfg.device},       {"dtype", cfg.dtype},        {"steps", cfg.steps},
                 {"warmup", cfg.warmup},       {"model_flops_per_step", cfg.model_flops_per_step},
                 {"forward_flops", cfg.forward_flops}, {"threads", cfg.threads},
                 {"clock", cfg.clock}};
  for (const StrategyResult& r : results) {
    j["results"].push_back({{"strategy", r.name},
                            {"description", r.description},
                            {"reentrant", r.reentrant},
                            {"peak_bytes", r.peak_bytes},
                            {"activation_bytes", r.activation_bytes},
                            {"predicted_bytes", r.predicted_bytes},
                            {"step_ms", r.step_ms},
                            {"median_ms", r.median_ms},
                            {"recomputed_flops_per_step", r.recomputed_flops_per_step},
                            {"recomputed_calls_per_step", r.recomputed_calls_per_step},
                            {"replayed_per_step", r.replayed_per_step},
                            {"final_loss", r.final_loss},
                            {"timeline", r.timeline}});
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
  cfg->steps = c.value("steps", int64_t{0});
  cfg->threads = c.value("threads", int64_t{0});
  cfg->clock = c.value("clock", std::string("wall"));
  cfg->model_flops_per_step = c.value("model_flops_per_step", 0.0);
  for (const auto& r : j.at("results")) {
    StrategyResult s;
    s.name = r.at("strategy");
    s.description = r.value("description", std::string());
    s.peak_bytes = r.value("peak_bytes", int64_t{0});
    s.activation_bytes = r.value("activation_bytes", int64_t{0});
    s.predicted_bytes = r.value("predicted_bytes", 0.0);
    s.median_ms = r.value("median_ms", 0.0);
    s.final_loss = r.value("final_loss", 0.0);
    s.recomputed_flops_per_step = r.value("recomputed_flops_per_step", 0.0);
    results->push_back(s);
  }
}

std::string pareto_svg(const RunConfig& cfg, const std::vector<StrategyResult>& results) {
  const double W = 720, H = 460, L = 80, R = 200, T = 50, B = 60;
  double xmax = 0, ymax = 0;
  for (const auto& r : results) {
    xmax = std::max(xmax, r.median_ms);
    ymax = std::max(ymax, r.activation_bytes / kMiB);
  }
  xmax *= 1.1;
  ymax *= 1.1;
  auto px = [&](double ms) { return L + (W - L - R) * ms / xmax; };
  auto py = [&](double mib) { return H - B - (H - T - B) * mib / ymax; };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  s << "<text x='" << L << "' y='24' font-size='15'>Activation memory vs step time: GPT " << cfg.shape.layers << "L d"
    << cfg.shape.embd << " seq" << cfg.shape.seq << " batch" << cfg.shape.batch << " (" << cfg.device << ", "
    << cfg.dtype << ")</text>\n";
  s << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B << "' stroke='black'/>\n";
  s << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B << "' stroke='black'/>\n";
  for (int i = 0; i <= 5; ++i) {
    double xv = xmax * i / 5, yv = ymax * i / 5;
    s << "<text x='" << px(xv) << "' y='" << H - B + 18 << "' text-anchor='middle'>" << fmt("%.0f", xv) << "</text>\n";
    s << "<text x='" << L - 8 << "' y='" << py(yv) + 4 << "' text-anchor='end'>" << fmt("%.0f", yv) << "</text>\n";
  }
  s << "<text x='" << (L + W - R) / 2 << "' y='" << H - 18 << "' text-anchor='middle'>median step time (ms)</text>\n";
  s << "<text transform='translate(20," << (T + H - B) / 2 << ") rotate(-90)' text-anchor='middle'>activation memory (MiB)</text>\n";
  // Pareto front: points no other point beats in both time and memory.
  std::vector<const StrategyResult*> front;
  for (const auto& a : results) {
    bool dominated = false;
    for (const auto& b : results) {
      if (&a == &b) continue;
      if (b.median_ms <= a.median_ms && b.activation_bytes <= a.activation_bytes &&
          (b.median_ms < a.median_ms || b.activation_bytes < a.activation_bytes))
        dominated = true;
    }
    if (!dominated) front.push_back(&a);
  }
  std::sort(front.begin(), front.end(), [](auto* a, auto* b) { return a->median_ms < b->median_ms; });
  s << "<polyline fill='none' stroke='#d62728' stroke-dasharray='5,4' points='";
  for (size_t i = 0; i < front.size(); ++i) {
    if (i > 0) s << px(front[i]->median_ms) << "," << py(front[i - 1]->activation_bytes / kMiB) << " ";
    s << px(front[i]->median_ms) << "," << py(front[i]->activation_bytes / kMiB) << " ";
  }
  s << "'/>\n";
  for (const auto& r : results) {
    bool on_front = std::find(front.begin(), front.end(), &r) != front.end();
    double x = px(r.median_ms), y = py(r.activation_bytes / kMiB);
    s << "<circle cx='" << x << "' cy='" << y << "' r='5' fill='" << (on_front ? "#d62728" : "#1f77b4") << "'/>\n";
    s << "<text x='" << x + 8 << "' y='" << y - 6 << "'>" << escape_xml(r.name) << "</text>\n";
  }
  s << "<text x='" << W - R + 10 << "' y='" << T + 10 << "' fill='#d62728'>Pareto front (red)</text>\n";
  s << "</svg>\n";
  return s.str();
}

std::string timeline_svg(const RunConfig& cfg, const StrategyResult& r) {
  const double W = 720, H = 300, L = 70, R = 20, T = 40, B = 40;
  double ymax = 1;
  for (int64_t v : r.timeline) ymax = std::max(ymax, v / kMiB);
  ymax *= 1.1;
  size_t n = std::max<size_t>(r.timeline.size(), 2);
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  s << "<text x='" << L << "' y='22' font-size='14'>" << escape_xml(r.name) << ": allocated memory over one step ("
    << cfg.device << ")</text>\n";
  s << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B << "' stroke='black'/>\n";
  s << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {
    double yv = ymax * i / 4;
    double y = H - B - (H - T - B) * yv / ymax;
    s << "<text x='" << L - 6 << "' y='" << y + 4 << "' text-anchor='end'>" << fmt("%.0f", yv) << "</text>\n";
  }
  s << "<text x='" << (L + W - R) / 2 << "' y='" << H - 10 << "' text-anchor='middle'>op call (forward, then backward)</text>\n";
  s << "<text transform='translate(16," << (T + H - B) / 2 << ") rotate(-90)' text-anchor='middle'>MiB</text>\n";
  s << "<polyline fill='none' stroke='#1f77b4' points='";
  for (size_t i = 0; i < r.timeline.size(); ++i) {
    double x = L + (W - L - R) * static_cast<double>(i) / static_cast<double>(n - 1);
    double y = H - B - (H - T - B) * (r.timeline[i] / kMiB) / ymax;
    s << x << "," << y << " ";
  }
  s << "'/>\n</svg>\n";
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
  if (ours_cfg.shape.layers != theirs_cfg.shape.layers || ours_cfg.shape.embd != theirs_cfg.shape.embd ||
      ours_cfg.shape.seq != theirs_cfg.shape.seq || ours_cfg.shape.batch != theirs_cfg.shape.batch) {
    std::printf("warning: the two runs used different model sizes; ratios compare unlike things\n");
  }
  std::printf("%-15s %11s %11s %7s %11s %11s %7s\n", "strategy", "remat MiB", "other MiB", "ratio", "remat ms",
              "other ms", "ratio");
  for (const auto& r : ours) {
    const StrategyResult* t = find(theirs, r.name);
    if (t == nullptr) {
      std::printf("%-15s %11.1f %11s %7s %11.1f %11s %7s\n", r.name.c_str(), r.activation_bytes / kMiB, "-", "-",
                  r.median_ms, "-", "-");
      continue;
    }
    std::printf("%-15s %11.1f %11.1f %7.2f %11.1f %11.1f %7.2f\n", r.name.c_str(), r.activation_bytes / kMiB,
                t->activation_bytes / kMiB, t->activation_bytes > 0 ? r.activation_bytes / double(t->activation_bytes) : 0.0,
                r.median_ms, t->median_ms, t->median_ms > 0 ? r.median_ms / t->median_ms : 0.0);
  }
  std::printf("ratio: remat / other (below 1: remat uses less memory or time)\n");
}

}  // namespace remat::bench
