// Tests bench/report.{h,cpp} and bench/plots.{h,cpp}: the table and its ratio column, the JSON,
// the pictures (the category stack sums to the measured total, labels do not overlap, axes start
// near the data) and the self-contained HTML report.
#include "bench/report.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "bench/plots.h"

using namespace remat;
using namespace remat::bench;

namespace {

// batch, seq, embd, heads, vocab, layers
const ModelShape kTiny{2, 8, 16, 2, 11, 2};

RunConfig tiny_config() {
  RunConfig cfg;
  cfg.shape = kTiny;
  cfg.steps = 2;
  cfg.warmup = 1;
  return cfg;
}

// A strategy measured on the CPU and predicted on Meta, timelines kept (three steps).
StrategyResult measured_result(const Strategy& s) {
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
std::vector<StrategyResult> synthetic_results() {
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

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report: the ratio column reads 1.000 only when measured equals predicted to the byte", "[report]") {
  CHECK(ratio_text(123456789, 123456789) == "1.000");
  CHECK(ratio_text(123456790, 123456789) == "~1.000");  // one byte off: never a plain 1.000
  CHECK(ratio_text(123456788, 123456789) == "~1.000");
  CHECK(ratio_text(200, 100) == "2.000");
  CHECK(ratio_text(100, 200) == "0.500");
  CHECK(ratio_text(100, 0) == "-");  // nothing predicted
}

TEST_CASE("report: the table has predicted beside measured with ratios, aligned", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  rs[1].predicted.peak_bytes += 512;  // a prediction that missed
  Table t = result_table(tiny_config(), rs);
  REQUIRE(t.header.size() == 12);
  CHECK(t.header[1] == "peak MiB");
  CHECK(t.header[2] == "predicted");
  CHECK(t.header[3] == "ratio");
  CHECK(t.header[6] == "ratio");
  REQUIRE(t.rows.size() == rs.size());
  CHECK(t.rows[0][0] == "none");
  CHECK(t.rows[0][1] == "115.2");
  CHECK(t.rows[0][3] == "1.000");
  CHECK(t.rows[1][3] == "~1.000");
  CHECK(t.rows[3][8] == "15%");  // every2: 497.0 ms against none's 431.4
  std::string text = table_text(t);
  std::istringstream lines(text);
  std::string line, first;
  std::getline(lines, first);
  while (std::getline(lines, line)) CHECK(line.size() == first.size());
  std::string html = table_html(t);
  CHECK(count(html, "<tr>") == rs.size() + 1);
  CHECK(count(html, "class='off'") == 1);
  CHECK(count(html, "class='ok'") == 2 * rs.size() - 1);
}

TEST_CASE("report: after --dry-run the table holds the predictions and what the peak is made of", "[report]") {
  TrainingOptions o;
  StrategyResult r;
  r.name = "none";
  record_predicted(run_training_steps(all_strategies()[0], kTiny, Device{kMeta}, 3, o), 1, 0.01, &r);
  RunConfig cfg = tiny_config();
  cfg.dry_run = true;
  Table t = result_table(cfg, {r});
  CHECK(std::find(t.header.begin(), t.header.end(), "ratio") == t.header.end());
  CHECK(t.header[1] == "peak MiB");
  CHECK(t.header[3] == "params");
  CHECK(t.rows.at(0).at(1) == [&] {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", r.predicted.peak_bytes / (1024.0 * 1024.0));
    return std::string(buf);
  }());
  CHECK_FALSE(r.measured.known);
  CHECK(r.predicted.peak_bytes > 0);
}

TEST_CASE("report: counting like CUDA, reserved bytes and segments beside allocated, measured and predicted",
          "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  for (StrategyResult& r : rs) {
    r.measured.peak_reserved_bytes = r.predicted.peak_reserved_bytes = 4 * 2097152;
    r.measured.segments = r.predicted.segments = 4;
  }
  rs[1].measured.peak_reserved_bytes += 2097152;  // one segment more than predicted
  RunConfig cfg = tiny_config();
  CHECK(result_table(cfg, rs).header.size() == 12);  // the CPU's: no reserved columns
  cfg.meta_accounting = "cuda";
  const Table t = result_table(cfg, rs);
  REQUIRE(t.header.size() == 17);
  CHECK(t.header[4] == "reserved MiB");
  CHECK(t.header[7] == "segments");
  CHECK(t.rows[0][4] == "8.0");
  CHECK(t.rows[0][6] == "1.000");
  CHECK(t.rows[1][6] == "1.250");
  CHECK(t.rows[0][7] == "4");
  CHECK(t.notes.back().find("reserved: max_memory_reserved") == 0);
  // After --dry-run: the predictions only.
  for (StrategyResult& r : rs) r.measured = StepsMemory{};
  const Table dry = result_table(cfg, rs);
  CHECK(dry.header[2] == "reserved MiB");
  CHECK(dry.header[3] == "segments");
  CHECK(dry.rows[0][2] == "8.0");
  RunConfig back_cfg;
  std::vector<StrategyResult> back;
  rs[0].predicted.segments = 7;
  from_json(to_json(cfg, rs), &back_cfg, &back);
  CHECK(back[0].predicted.peak_reserved_bytes == 4 * 2097152);
  CHECK(back[0].predicted.segments == 7);
}

TEST_CASE("report: the JSON keeps the predicted and measured figures", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  rs[2].predicted.activation_bytes = 12345;
  RunConfig cfg = tiny_config(), back_cfg;
  cfg.meta_accounting = "cuda";
  cfg.attention = "sdpa";
  std::vector<StrategyResult> back;
  from_json(to_json(cfg, rs), &back_cfg, &back);
  REQUIRE(back.size() == rs.size());
  CHECK(back_cfg.meta_accounting == "cuda");
  CHECK(back_cfg.attention == "sdpa");
  CHECK(back_cfg.warmup == 1);
  for (size_t i = 0; i < rs.size(); ++i) {
    CHECK(back[i].name == rs[i].name);
    CHECK(back[i].measured.known);
    CHECK(back[i].measured.peak_bytes == rs[i].measured.peak_bytes);
    CHECK(back[i].predicted.peak_bytes == rs[i].predicted.peak_bytes);
    CHECK(back[i].predicted.activation_bytes == rs[i].predicted.activation_bytes);
  }
}

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

TEST_CASE("report: the HTML page holds the table and every SVG inline, with no external resource", "[report]") {
  std::vector<StrategyResult> rs = {measured_result(all_strategies()[0]), measured_result(all_strategies()[1])};
  RunConfig cfg = tiny_config();
  std::string html = report_html(cfg, rs);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find(pareto_svg(cfg, rs)) != std::string::npos);
  for (const StrategyResult& r : rs) CHECK(html.find(timeline_svg(cfg, r)) != std::string::npos);
  CHECK(html.find(table_html(result_table(cfg, rs))) != std::string::npos);
  for (const char* external : {"src=", "<link", "url(", "@import", "<script"})
    CHECK(html.find(external) == std::string::npos);
  // A dry run's page: no Pareto chart (nothing was timed), the timelines still there.
  for (StrategyResult& r : rs) r.measured.known = false;
  cfg.dry_run = true;
  std::string dry = report_html(cfg, rs);
  CHECK(dry.find("Peak memory against step time") == std::string::npos);
  CHECK(count(dry, "<svg ") == rs.size());
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

namespace {

// Four planned points between full's and none's peaks, as a sweep measures them; the first was
// planned at full's own peak (--sweep-at-strategies).
std::vector<StrategyResult> synthetic_sweep(const std::vector<StrategyResult>& strategies) {
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
    r.plan_overhead_seconds = flops / 50e9;  // the planner's price: 62.0 ms at 3.1 GFLOP
    r.planning_seconds = 0.5;
    sweep.push_back(r);
  }
  sweep[0].budget_bytes = strategies.at(1).measured.peak_bytes;
  sweep[0].at_strategy = strategies.at(1).name;
  sweep[0].paired = {{strategies.at(1).name, 560.0, 532.0, 10}};
  return sweep;
}

}  // namespace

TEST_CASE("report: the step times measured in turn, with overheads against none's", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  CHECK(interleaved_table(rs).rows.empty());  // not measured in turn: no table
  rs[0].interleaved_ms = 400.0;  // none
  rs[1].interleaved_ms = 500.0;  // full
  Table t = interleaved_table(rs);
  CHECK(t.header == std::vector<std::string>{"strategy", "step ms in turn", "overhead", "step ms alone"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == std::vector<std::string>{"none", "400.0", "0%", "431.4"});
  CHECK(t.rows[1] == std::vector<std::string>{"full", "500.0", "25%", "568.7"});
  rs[0].interleaved_ms = 0;  // without none: no overhead
  CHECK(interleaved_table(rs).rows[0][2] == "-");
  rs[0].interleaved_ms = 400.0;
  nlohmann::json j = nlohmann::json::parse(to_json(tiny_config(), rs));
  CHECK(j["results"][1]["interleaved_ms"] == 500.0);
  CHECK_FALSE(j["results"][2].contains("interleaved_ms"));
  CHECK(report_html(tiny_config(), rs, {}).find(table_html(t)) != std::string::npos);
}

TEST_CASE("report: a planned row gets a fits column; the sweep's tables compare plans with strategies", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  REQUIRE(rs[1].name == "full");
  CHECK(result_table(tiny_config(), rs).header.back() == "final loss");  // no planned row: no fits column
  StrategyResult planned = rs[5];
  planned.name = "planned";
  planned.budget_bytes = planned.measured.peak_bytes;
  planned.plan_predicted_peak_bytes = planned.measured.peak_bytes;
  planned.planning_seconds = 0.25;
  planned.planning_dry_runs = 37;
  rs.push_back(planned);
  Table t = result_table(tiny_config(), rs);
  REQUIRE(t.header.back() == "fits");
  CHECK(t.rows.back().back() == "yes");  // measured == budget fits
  CHECK(t.rows.front().back() == "-");  // a fixed strategy
  rs.back().budget_bytes -= 1;
  CHECK(result_table(tiny_config(), rs).rows.back().back() == "NO");
  CHECK(planning_line(planned).find("planned for a budget of 88.10 MiB (92379545 bytes) of allocated memory in 0.25 s, "
                                    "37 dry runs") != std::string::npos);
  planned.plan_counter = "reserved";  // a plan for CUDA bounds the caching allocator's reserved bytes
  CHECK(planning_line(planned).find("of reserved memory") != std::string::npos);

  const std::vector<StrategyResult> sweep = synthetic_sweep(rs);
  Table st = sweep_table(sweep);
  REQUIRE(st.rows.size() == 4);
  CHECK(st.header == std::vector<std::string>{"plan", "budget MiB", "predicted", "measured", "fits", "recomp GF",
                                              "est ms", "step ms", "plan s", "at the peak of"});
  CHECK(st.rows[0][4] == "yes");
  CHECK(st.rows[0][5] == "3.100");
  CHECK(st.rows[0][6] == "62.0");
  CHECK(st.rows[0][9] == "full");
  CHECK(st.rows[1][9] == "-");
  CHECK(st.rows[3][2] == "115.00");
  Table c = comparison_table(rs, sweep);
  REQUIRE(c.rows.size() == 1);  // only full's peak was planned at
  CHECK(c.rows[0] == std::vector<std::string>{"full", "70.1", "568.7", "520.0", "0.914", "560.0", "532.0", "0.950",
                                              "0.000", "3.100"});
  // Without paired timings (not run): dashes.
  std::vector<StrategyResult> unpaired = sweep;
  unpaired[0].paired.clear();
  CHECK(comparison_table(rs, unpaired).rows[0][5] == "-");
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

TEST_CASE("report: the JSON and the HTML page carry the planned points", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  std::vector<StrategyResult> sweep = synthetic_sweep(rs);
  RunConfig cfg = tiny_config();
  nlohmann::json j = nlohmann::json::parse(to_json(cfg, rs, sweep));
  REQUIRE(j.at("sweep").size() == sweep.size());
  CHECK(j["sweep"][0]["budget_bytes"] == sweep[0].budget_bytes);
  CHECK(j["sweep"][0]["fits"] == true);
  CHECK(j["sweep"][0]["at_strategy"] == "full");
  CHECK(j["sweep"][0]["paired"][0]["planned_ms"] == 532.0);
  CHECK_FALSE(j["sweep"][1].contains("paired"));
  CHECK(j["sweep"][2]["plan_recompute_flops"] == 0.2e9);
  CHECK_FALSE(j["results"][0].contains("budget_bytes"));  // a fixed strategy
  CHECK_FALSE(nlohmann::json::parse(to_json(cfg, rs)).contains("sweep"));
  std::string html = report_html(cfg, rs, sweep);
  CHECK(html.find(pareto_svg(cfg, rs, sweep)) != std::string::npos);
  CHECK(html.find(pareto_svg(cfg, rs, sweep, ParetoX::kRecomputedFlops)) != std::string::npos);
  CHECK(html.find(table_html(sweep_table(sweep))) != std::string::npos);
  CHECK(html.find(table_html(comparison_table(rs, sweep))) != std::string::npos);
}
