// Tests bench/render/plots.cpp: the pictures (the category stack sums to the measured total,
// labels do not overlap, axes start near the data, the planned frontier) and their pieces.
#include "bench/render/render.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "bench/render/internal.h"  // place_labels, the axes, the category stack
#include "tests/bench/render/results_fixture.h"

using namespace remat;
using namespace remat::bench;
using namespace remat::bench::render_testing;

namespace {

// The text boxes of the <text> elements whose content is one of `names` (as plots.cpp writes them).
std::vector<Box> label_boxes(const std::string& svg, const std::vector<std::string>& names) {
  std::vector<Box> boxes;
  std::regex text_re("<text x='([-0-9.]+)' y='([-0-9.]+)'>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text_re); it != std::sregex_iterator(); ++it) {
    const std::string label = (*it)[3];
    if (std::find(names.begin(), names.end(), label) == names.end()) continue;
    const double x = std::stod((*it)[1]), baseline = std::stod((*it)[2]);
    boxes.push_back(Box{x, baseline - 12 * 0.95, text_width(label, 12), 12 * 1.25});
  }
  return boxes;
}

// The strategies' labels in a Pareto chart overlap neither each other nor any of `markers`.
void check_labels_apart(const std::string& svg, const std::vector<StrategyResult>& rs,
                        const std::vector<Box>& markers = {}) {
  std::vector<std::string> names;
  for (const auto& r : rs) names.push_back(r.name);
  std::vector<Box> boxes = label_boxes(svg, names);
  REQUIRE(boxes.size() == rs.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = i + 1; j < boxes.size(); ++j) CHECK_FALSE(overlaps(boxes[i], boxes[j]));
    for (const Box& m : markers) CHECK_FALSE(overlaps(boxes[i], m));
  }
}

}  // namespace

TEST_CASE("plots: the category stack sums to the measured total at every event", "[report]") {
  for (const Strategy& s : all_strategies()) {
    INFO("strategy " << s.name);
    StrategyResult r = measured_result(s);
    REQUIRE_FALSE(r.measured.timeline.empty());
    CategoryStack stack = stack_by_category(r.measured.timeline);
    REQUIRE(stack.event.size() == stack.bytes.size());
    REQUIRE(stack.event.size() == stack.allocated.size());
    size_t relabels = 0;
    for (const MemoryEvent& e : r.measured.timeline.events) relabels += e.relabel && e.delta < 0;
    CHECK(stack.event.size() == r.measured.timeline.events.size() - relabels);  // a relabel's halves: one sample
    int64_t highest = 0;
    for (size_t i = 0; i < stack.event.size(); ++i) {
      int64_t sum = 0;
      for (int64_t b : stack.bytes[i]) sum += b;
      REQUIRE(sum == stack.allocated[i]);
      REQUIRE(stack.allocated[i] == r.measured.timeline.events[stack.event[i]].allocated);
      highest = std::max(highest, sum);
    }
    CHECK(highest == r.measured.peak_bytes);  // the last step's peak is the measured one (steps after the first agree)
    // The dry run's stack is the same, sample for sample.
    CategoryStack predicted = stack_by_category(r.predicted.timeline);
    CHECK(predicted.bytes == stack.bytes);
  }
}

TEST_CASE("plots: a relabel moves bytes between categories without a dip in the stack", "[report]") {
  StepTimeline t;
  t.step = 0;
  t.start_by_category = {{MemoryCategory::Parameter, 100}};
  t.events = {
      MemoryEvent{164, 64, "aten::mm", "", MemoryCategory::Temporary, "forward", false},
      MemoryEvent{164, -64, "", "", MemoryCategory::Temporary, "backward", true},
      MemoryEvent{164, 64, "", "", MemoryCategory::Gradient, "backward", true},
      MemoryEvent{100, -64, "", "", MemoryCategory::Gradient, "optimizer", false},
  };
  CategoryStack s = stack_by_category(t);
  REQUIRE(s.event == std::vector<size_t>{0, 2, 3});
  CHECK(s.bytes[0][static_cast<size_t>(MemoryCategory::Temporary)] == 64);
  CHECK(s.bytes[1][static_cast<size_t>(MemoryCategory::Temporary)] == 0);
  CHECK(s.bytes[1][static_cast<size_t>(MemoryCategory::Gradient)] == 64);
  CHECK(s.allocated == std::vector<int64_t>{164, 164, 100});
  std::vector<PhaseBand> bands = phase_bands(t);
  REQUIRE(bands.size() == 3);
  CHECK(bands[0].phase == "forward");
  CHECK(bands[1].phase == "backward");
  CHECK(bands[1].begin == 1);
  CHECK(bands[1].end == 3);
  CHECK(bands[2].end == 4);
}

TEST_CASE("plots: the timeline draws each category, the phases and the dashed prediction", "[report]") {
  StrategyResult r = measured_result(all_strategies()[1]);  // full: has a recompute phase
  std::string svg = timeline_svg(tiny_config(), r);
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<polygon") >= 3);  // parameters, optimizer state, activations at least
  for (const char* label : {"parameters", "optimizer state", "activations", "gradients", "measured",
                            "dry-run prediction", "forward", "backward", "recompute", "optimizer", "allocated (MiB)"}) {
    INFO("label " << label);
    CHECK(svg.find(std::string(">") + label + "<") != std::string::npos);
  }
  CHECK(svg.find("stroke-dasharray='7,5'") != std::string::npos);
  CHECK(svg.find("full: memory over one training step") != std::string::npos);
  // A dry run alone: the predicted stack, its total dashed, nothing called measured.
  StrategyResult dry = r;
  dry.measured.known = false;
  dry.measured.timeline = StepTimeline{};
  std::string dry_svg = timeline_svg(tiny_config(), dry);
  CHECK(dry_svg.find(">measured<") == std::string::npos);
  CHECK(dry_svg.find("predicted by a dry run") != std::string::npos);
}

TEST_CASE("plots: counting like CUDA, the timeline draws reserved over allocated; the JSON keeps both", "[report]") {
  TrainingOptions o;
  o.keep_timeline = true;
  StrategyResult r;
  r.name = "none";
  {
    MetaAccountingGuard accounting(kCUDA);
    record_predicted(run_training_steps(all_strategies().front(), kTiny, Device{kMeta}, 3, o), 1, 0.01, &r);
  }
  REQUIRE_FALSE(r.predicted.timeline.empty());
  // Each sample's reserved bytes are the cache's after that event: at least the allocated ones, a
  // whole number of 2 MiB small segments and 20 MiB large ones here, and their peak the step's.
  const CategoryStack stack = stack_by_category(r.predicted.timeline);
  REQUIRE(stack.reserved.size() == stack.allocated.size());
  int64_t highest = 0;
  for (size_t i = 0; i < stack.reserved.size(); ++i) {
    REQUIRE(stack.reserved[i] >= stack.allocated[i]);
    REQUIRE(stack.reserved[i] % (2 << 20) == 0);
    highest = std::max(highest, stack.reserved[i]);
  }
  CHECK(highest == r.predicted.peak_reserved_bytes);
  RunConfig cfg = tiny_config();
  cfg.meta_accounting = "cuda";
  const std::string svg = timeline_svg(cfg, r);
  for (const char* label : {"reserved (CUDA cache)", "dry-run prediction", "allocated and reserved (MiB)"}) {
    INFO("label " << label);
    CHECK(svg.find(std::string(">") + label + "<") != std::string::npos);
  }
  CHECK(count(svg, "stroke='#fdae6b'") == 2);  // the reserved line and its legend
  CHECK(svg.find("; reserved ") != std::string::npos);
  // Counting like the CPU, no reserved line.
  const std::string cpu_svg = timeline_svg(tiny_config(), r);
  CHECK(cpu_svg.find("reserved") == std::string::npos);
  // results.json: the predicted timeline's reserved series, sample for sample.
  const nlohmann::json j = nlohmann::json::parse(to_json(cfg, {r}));
  const auto& t = j.at("results").at(0).at("predicted_timeline");
  CHECK(t.at("reserved").get<std::vector<int64_t>>() == stack.reserved);
  CHECK(t.at("allocated").get<std::vector<int64_t>>() == stack.allocated);
}

TEST_CASE("plots: labels placed greedily do not overlap each other or the points", "[report]") {
  const Box area{50, 50, 400, 300};
  std::vector<PointLabel> labels;
  for (int i = 0; i < 8; ++i)
    labels.push_back(PointLabel{200 + 3.0 * i, 200 + 2.0 * (i % 3), "strategy-" + std::to_string(i)});
  labels.push_back(PointLabel{55, 55, "corner"});  // near the area's corner: must stay inside
  std::vector<Box> boxes = place_labels(labels, area, 12, 5);
  REQUIRE(boxes.size() == labels.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    INFO("label " << labels[i].text);
    CHECK(boxes[i].x >= area.x);
    CHECK(boxes[i].y >= area.y);
    CHECK(boxes[i].x + boxes[i].w <= area.x + area.w);
    CHECK(boxes[i].y + boxes[i].h <= area.y + area.h);
    for (size_t j = 0; j < boxes.size(); ++j) {
      if (j != i) CHECK_FALSE(overlaps(boxes[i], boxes[j]));
      CHECK_FALSE(overlaps(boxes[i], Box{labels[j].x - 5, labels[j].y - 5, 10, 10}));
    }
  }
}

TEST_CASE("plots: the Pareto chart's labels do not overlap and its axes start near the data", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  std::string svg = pareto_svg(tiny_config(), rs);
  check_labels_apart(svg, rs);
  // Step times 431-575 ms and peaks 70-115 MiB: neither axis starts at 0.
  CHECK(svg.find(">0</text>") == std::string::npos);
  CHECK(svg.find(">peak memory (MiB)<") != std::string::npos);
  CHECK(count(svg, "<circle") == rs.size());
  CHECK(svg.find(">median step time (ms)<") != std::string::npos);
  // On the emulated device the time axis says whose time it is.
  RunConfig emulated = tiny_config();
  emulated.device = "cuda (emulated)";
  CHECK(pareto_svg(emulated, rs).find(">median step time (ms) on the emulated device: CPU time, not GPU time<") !=
        std::string::npos);
}

TEST_CASE("plots: axes start at 0 only where the data come near it", "[report]") {
  Axis a = axis_near_data(431.4, 574.8);
  CHECK(a.lo > 300);
  CHECK(a.lo <= 431.4);
  CHECK(a.hi >= 574.8);
  CHECK(a.ticks.size() >= 3);
  CHECK(a.ticks.front() >= a.lo);
  CHECK(a.ticks.back() <= a.hi);
  Axis near_zero = axis_near_data(5, 100);
  CHECK(near_zero.lo == 0);
  Axis flat = axis_near_data(0.3, 0.3);  // one value: a small range around it
  CHECK(flat.lo < 0.3);
  CHECK(flat.hi > 0.3);
  Axis stacked = axis_from_zero(115.2);
  CHECK(stacked.lo == 0);
  CHECK(stacked.hi >= 115.2);
}

TEST_CASE("plots: tick labels have the decimals their spacing needs", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  for (size_t i = 0; i < rs.size(); ++i) {  // peaks 0.60-0.67 MiB, times 10-45 ms
    rs[i].measured.peak_bytes = static_cast<int64_t>((0.60 + 0.01 * static_cast<double>(i)) * 1024 * 1024);
    rs[i].median_ms = 10 + 5.0 * static_cast<double>(i);
  }
  std::string svg = pareto_svg(tiny_config(), rs);
  std::regex tick_re("fill='#333'>([^<]*)</text>");
  std::vector<std::string> ticks;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick_re); it != std::sregex_iterator(); ++it)
    ticks.push_back((*it)[1]);
  REQUIRE(ticks.size() >= 6);
  std::vector<std::string> sorted = ticks;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // no two ticks read the same
  CHECK(std::find(ticks.begin(), ticks.end(), "0.62") != ticks.end());
}

TEST_CASE("plots: the planned frontier is one line through the sweep's points in order of peak", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  std::vector<StrategyResult> sweep = synthetic_sweep(rs);
  std::swap(sweep[1], sweep[3]);  // drawn in order of peak whatever the order given
  std::string svg = pareto_svg(tiny_config(), rs, sweep);
  CHECK(pareto_svg(tiny_config(), rs).find("planned-frontier") == std::string::npos);
  REQUIRE(count(svg, "id='planned-frontier'") == 1);
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, std::regex("id='planned-frontier'[^>]* points='([^']*)'")));
  std::vector<double> ys;
  std::istringstream points(m[1].str());
  std::string point;
  while (points >> point) ys.push_back(std::stod(point.substr(point.find(',') + 1)));
  REQUIRE(ys.size() == sweep.size());
  for (size_t i = 1; i < ys.size(); ++i) CHECK(ys[i] < ys[i - 1]);  // rising peak: higher up the picture
  CHECK(svg.find("green: the planned frontier (plan_checkpointing at 4 budgets") != std::string::npos);
  CHECK(count(svg, "<circle") == rs.size());  // the strategies' points as before
  // The strategies' labels still overlap neither each other nor the frontier's markers.
  std::vector<Box> markers;
  std::regex marker_re("<rect x='([-0-9.]+)' y='([-0-9.]+)' width='7' height='7' fill='#2ca02c'/>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), marker_re); it != std::sregex_iterator(); ++it)
    markers.push_back(Box{std::stod((*it)[1]), std::stod((*it)[2]), 7, 7});
  REQUIRE(markers.size() == sweep.size());  // one marker per planned point
  check_labels_apart(svg, rs, markers);
  // Against recomputed FLOPs: from 0 (none) up, the same frontier.
  std::string flops = pareto_svg(tiny_config(), rs, sweep, ParetoX::kRecomputedFlops);
  CHECK(flops.find("Peak memory against recomputed FLOPs") != std::string::npos);
  CHECK(flops.find(">recomputed GFLOP per step<") != std::string::npos);
  CHECK(count(flops, "id='planned-frontier'") == 1);
}

namespace {
// The y coordinates of the polyline with `id` (one per point, in the order drawn).
std::vector<double> polyline_ys(const std::string& svg, const std::string& id) {
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, std::regex("id='" + id + "'[^>]* points='([^']*)'")));
  std::vector<double> ys;
  std::istringstream points(m[1].str());
  std::string point;
  while (points >> point) ys.push_back(std::stod(point.substr(point.find(',') + 1)));
  return ys;
}
}  // namespace

TEST_CASE("plots: with --offload the keep/recompute/offload frontier is a second line beside the planned one",
          "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  std::vector<StrategyResult> sweep = synthetic_sweep(rs);
  std::vector<StrategyResult> offload = synthetic_offload_sweep(sweep);
  std::swap(offload[0], offload[2]);  // drawn in order of peak whatever the order given
  const RunConfig cfg = emulated_cuda_config();
  for (ParetoX x : {ParetoX::kStepTime, ParetoX::kRecomputedFlops}) {
    const std::string svg = pareto_svg(cfg, rs, sweep, x, offload);
    CHECK(count(svg, "id='planned-frontier'") == 1);
    REQUIRE(count(svg, "id='planned-frontier-offload'") == 1);
    const std::vector<double> ys = polyline_ys(svg, "planned-frontier-offload");
    REQUIRE(ys.size() == offload.size());
    for (size_t i = 1; i < ys.size(); ++i) CHECK(ys[i] < ys[i - 1]);
    CHECK(svg.find("purple: keep/recompute/offload (--offload 32.0 MiB of host memory, same budgets; emulated: no "
                   "real link)") != std::string::npos);
    CHECK(count(svg, "fill='#9467bd'/>") == offload.size());  // one marker per offload plan
    CHECK(pareto_svg(cfg, rs, sweep, x).find("planned-frontier-offload") == std::string::npos);
  }
}

TEST_CASE("plots: the modeled-cost chart draws both frontiers from the planner's figures, labelled as modeled",
          "[report]") {
  std::vector<StrategyResult> sweep = synthetic_sweep(synthetic_results());
  std::vector<StrategyResult> offload = synthetic_offload_sweep(sweep);
  RunConfig cfg = emulated_cuda_config();
  std::string svg = modeled_cost_svg(cfg, sweep, offload);
  CHECK(svg.find("modeled, not measured: the emulated device has no real link") != std::string::npos);
  CHECK(svg.find("modeled cost per step (microseconds): recompute + transfer not hidden by compute") !=
        std::string::npos);
  const std::vector<double> plain = polyline_ys(svg, "planned-frontier");
  const std::vector<double> with_offload = polyline_ys(svg, "planned-frontier-offload");
  REQUIRE(plain.size() == sweep.size());
  REQUIRE(with_offload.size() == offload.size());
  // Each offload plan peaks lower than the plan at its budget: lower on the picture is larger y.
  for (size_t i = 0; i < plain.size(); ++i) CHECK(with_offload[i] > plain[i]);
  // A dry run's figures are modeled too, whatever the device; so are the ones nothing measured.
  cfg.device = "cuda";
  cfg.dry_run = true;
  for (StrategyResult& r : offload) r.measured.known = false;
  CHECK(modeled_cost_svg(cfg, sweep, offload).find("modeled, not measured: a dry run moves no bytes") !=
        std::string::npos);
}
