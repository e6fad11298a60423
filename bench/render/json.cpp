// results.json of bench/memory_vs_recompute, written and read (no PyTorch counterpart; the same
// file bench/torch_reference.py writes; see render.h).
#include "bench/render/internal.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace remat::bench {

using namespace render_internal;

namespace {

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
    if (r.beside_ms > 0) e["beside_ms"] = r.beside_ms;
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

// A number --compare could not read back (nlohmann writes NaN and Inf as null): refused, naming
// where it is, so that no results.json holds one (issue 45).
void check_finite(const nlohmann::json& j, const std::string& where) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) {
    const double v = j.get<double>();
    throw Error("results.json: " + where + " is " + (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf") +
                ", which JSON cannot hold; the file is not written (--compare could not read it back)");
  }
  if (j.is_object())
    for (const auto& [key, value] : j.items()) check_finite(value, where.empty() ? key : where + "." + key);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) check_finite(j[i], where + "[" + std::to_string(i) + "]");
}

}  // namespace

std::string to_json(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                    const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& offload) {
  nlohmann::json j;
  j["framework"] = cfg.framework;
  j["config"] = {{"model", cfg.shape.model},
                 {"kv_heads", cfg.shape.kv_heads_or_heads()},
                 {"ffn_hidden", cfg.shape.ffn_hidden},
                 {"layers", cfg.shape.layers},
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
  check_finite(j, "");
  return j.dump(1);
}

namespace {

void read_json(const std::string& text, RunConfig* cfg, std::vector<StrategyResult>* results) {
  nlohmann::json j = nlohmann::json::parse(text);
  cfg->framework = j.value("framework", std::string("?"));
  const auto& c = j.at("config");
  cfg->shape = ModelShape{c.at("batch"), c.at("seq"), c.at("embd"), c.at("heads"), c.at("vocab"), c.at("layers")};
  cfg->shape.model = c.value("model", std::string("gpt"));  // files written before --model: the GPT
  if (cfg->shape.is_llama()) {
    cfg->shape.kv_heads = c.value("kv_heads", int64_t{0});
    cfg->shape.ffn_hidden = c.value("ffn_hidden", int64_t{0});
  }
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

}  // namespace

void from_json(const std::string& text, RunConfig* cfg, std::vector<StrategyResult>* results) {
  try {
    read_json(text, cfg, results);
  } catch (const nlohmann::json::exception& e) {  // not JSON, a field missing or of another type
    std::string what = e.what();
    if (what.size() > 200) what = what.substr(0, 200) + "...";
    throw Error("results.json: cannot read it: " + what);
  }
}

}  // namespace remat::bench
