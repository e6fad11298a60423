// Tests bench/render/report.cpp: the table and its ratio column, the tables of the steps measured
// in turn and of the sweep, the JSON and the self-contained HTML report.
#include "bench/render/render.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "bench/render/internal.h"  // ratio_text, table_html and the other tables
#include "tests/bench/render/results_fixture.h"

using namespace remat;
using namespace remat::bench;
using namespace remat::bench::render_testing;

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
  // --beside: PyTorch's medians in turn, the ratio and PyTorch's own overhead; a row PyTorch did not run: "-"
  rs[0].beside_ms = 800.0;
  rs[1].beside_ms = 1200.0;
  Table b = interleaved_table(rs);
  CHECK(b.header == std::vector<std::string>{"strategy", "step ms in turn", "overhead", "step ms alone",
                                             "PyTorch ms in turn", "ratio", "PyTorch overhead"});
  CHECK(b.rows[0] == std::vector<std::string>{"none", "400.0", "0%", "431.4", "800.0", "0.50", "0%"});
  CHECK(b.rows[1] == std::vector<std::string>{"full", "500.0", "25%", "568.7", "1200.0", "0.42", "50%"});
  rs[2].interleaved_ms = 450.0;
  CHECK(interleaved_table(rs).rows[2] == std::vector<std::string>{rs[2].name, "450.0", "12%",
                                                                  interleaved_table(rs).rows[2][3], "-", "-", "-"});
  j = nlohmann::json::parse(to_json(tiny_config(), rs));
  CHECK(j["results"][1]["beside_ms"] == 1200.0);
  CHECK_FALSE(j["results"][2].contains("beside_ms"));
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

TEST_CASE("report: --offload's table, JSON and page compare the two plans at each budget, labelled as modeled",
          "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  std::vector<StrategyResult> sweep = synthetic_sweep(rs);
  std::vector<StrategyResult> offload = synthetic_offload_sweep(sweep);
  RunConfig cfg = emulated_cuda_config();
  CHECK(offload_caveat(cfg) == "modeled, not measured: the emulated device has no real link");
  RunConfig dry = cfg;
  dry.device = "cuda";
  dry.dry_run = true;
  CHECK(offload_caveat(dry) == "modeled, not measured: a dry run moves no bytes");
  RunConfig real = cfg;
  real.device = "cuda";
  CHECK(offload_caveat(real).find("transfer times modeled at the planner's host link bandwidth") == 0);

  Table t = offload_table(sweep, offload);
  REQUIRE(t.rows.size() == offload.size());
  REQUIRE(t.header.size() == 15);
  for (size_t i = 0; i < offload.size(); ++i) {
    const StrategyResult &p = sweep[i], &o = offload[i];
    char cost[32], with[32], transfer[32];
    std::snprintf(cost, sizeof cost, "%.1f", p.plan_overhead_seconds * 1e6);  // microseconds
    std::snprintf(with, sizeof with, "%.1f", o.plan_overhead_seconds * 1e6);
    std::snprintf(transfer, sizeof transfer, "%.1f", o.plan_transfer_seconds * 1e6);
    CHECK(t.rows[i][5] == cost);
    CHECK(t.rows[i][7] == transfer);
    CHECK(t.rows[i][8] == with);
    CHECK(t.rows[i][11] == std::to_string(o.plan_offloaded_calls));
    // A sixth of the cost saved where there was recompute to save (1 - (2/3 + 1/6)); none at keep-all.
    CHECK(t.rows[i][12] == (p.plan_overhead_seconds > 0 ? "17%" : "-"));
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", o.median_ms);
    CHECK(t.rows[i][14] == ms);
  }
  CHECK(table_text(t).find("transfer us") != std::string::npos);
  std::string notes;
  for (const std::string& n : t.notes) notes += n + "\n";
  CHECK(notes.find("at 50.0 GB/s each way") != std::string::npos);

  nlohmann::json j = nlohmann::json::parse(to_json(cfg, rs, sweep, offload));
  CHECK(j["config"]["offload_bytes"] == cfg.offload_bytes);
  const nlohmann::json& o = j.at("offload");
  CHECK(o["host_budget_bytes"] == cfg.offload_bytes);
  CHECK(o["caveat"] == offload_caveat(cfg));
  CHECK(o["host_link_bandwidth"] == 50e9);
  CHECK(o["host_link_source"] == cfg.host_link_source);
  REQUIRE(o["rows"].size() == offload.size());
  REQUIRE(o["sweep"].size() == offload.size());
  for (size_t i = 0; i < offload.size(); ++i) {
    const nlohmann::json& row = o["rows"][i];
    CHECK(row["budget_bytes"] == sweep[i].budget_bytes);
    CHECK(row["keep_recompute"]["predicted_peak_bytes"] == sweep[i].plan_predicted_peak_bytes);
    CHECK(row["keep_recompute"]["cost_seconds"] == sweep[i].plan_overhead_seconds);
    CHECK(row["keep_recompute"]["transfer_seconds"] == 0.0);
    CHECK(row["offload"]["predicted_peak_bytes"] == offload[i].plan_predicted_peak_bytes);
    CHECK(row["offload"]["measured_peak_bytes"] == offload[i].measured.peak_bytes);
    CHECK(row["offload"]["recompute_seconds"] == offload[i].plan_recompute_seconds);
    CHECK(row["offload"]["transfer_seconds"] == offload[i].plan_transfer_seconds);
    CHECK(row["offload"]["cost_seconds"] == offload[i].plan_overhead_seconds);
    CHECK(row["offload"]["host_peak_bytes"] == offload[i].plan_host_peak_bytes);
    CHECK(row["offload"]["offloaded_bytes"] == offload[i].plan_offloaded_bytes);
    CHECK(o["sweep"][i]["plan_host_budget_bytes"] == cfg.offload_bytes);
  }
  CHECK_FALSE(nlohmann::json::parse(to_json(cfg, rs, sweep)).contains("offload"));
  // Read back, the offload plans keep their figures.
  RunConfig back_cfg;
  std::vector<StrategyResult> back;
  nlohmann::json as_results = j;
  as_results["results"] = o["sweep"];
  from_json(as_results.dump(), &back_cfg, &back);
  CHECK(back_cfg.offload_bytes == cfg.offload_bytes);
  CHECK(back_cfg.host_link_source == cfg.host_link_source);
  REQUIRE(back.size() == offload.size());
  CHECK(back[0].plan_overhead_seconds == offload[0].plan_overhead_seconds);
  CHECK(back[0].plan_offloaded_bytes == offload[0].plan_offloaded_bytes);

  std::string html = report_html(cfg, rs, sweep, offload);
  CHECK(html.find(table_html(offload_table(sweep, offload))) != std::string::npos);
  CHECK(html.find(modeled_cost_svg(cfg, sweep, offload)) != std::string::npos);
  CHECK(html.find(pareto_svg(cfg, rs, sweep, ParetoX::kStepTime, offload)) != std::string::npos);
  CHECK(html.find("(modeled, not measured: the emulated device has no real link)</h2>") != std::string::npos);
  CHECK(html.find("the host link: 50.0 GB/s each way (PCIe 5.0 x16 datasheet (emulated device: no link))") !=
        std::string::npos);
  CHECK(report_html(cfg, rs, sweep).find("planned-frontier-offload") == std::string::npos);
}
