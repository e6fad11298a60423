// Tests bench/render/json.cpp (no PyTorch counterpart): results.json never holds a value that
// --compare cannot read back (NaN and Inf refused, naming where), and a file --compare cannot
// read is one Error line, not a parser's exception (issue 45).
#include <catch2/catch.hpp>

#include <limits>

#include "bench/render/render.h"
#include "remat.h"
#include "tests/bench/render/results_fixture.h"

using namespace remat;
using namespace remat::bench;
using namespace remat::bench::render_testing;

TEST_CASE("results.json: a NaN or Inf figure is refused, naming where it is", "[report]") {
  std::vector<StrategyResult> rs = synthetic_results();
  rs[1].final_loss = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(to_json(tiny_config(), rs),
                    "results.json: results[1].final_loss is nan, which JSON cannot hold; the file is not written "
                    "(--compare could not read it back)");
  rs[1].final_loss = 1.0;
  rs[0].median_ms = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(to_json(tiny_config(), rs),
                    "results.json: results[0].median_ms is inf, which JSON cannot hold; the file is not written "
                    "(--compare could not read it back)");
  rs[0].median_ms = 1.0;
  RunConfig cfg = tiny_config();
  cfg.fma_peak_gflops = -std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(to_json(cfg, rs), "results.json: config.fma_peak_gflops is -inf, which JSON cannot hold; the file "
                                      "is not written (--compare could not read it back)");
}

TEST_CASE("results.json: every finite file written reads back", "[report]") {
  const std::vector<StrategyResult> rs = synthetic_results();
  RunConfig back_cfg;
  std::vector<StrategyResult> back;
  from_json(to_json(tiny_config(), rs), &back_cfg, &back);
  REQUIRE(back.size() == rs.size());
  CHECK(back[3].median_ms == rs[3].median_ms);
}

TEST_CASE("results.json: a file --compare cannot read is one Error naming why", "[report]") {
  RunConfig cfg;
  std::vector<StrategyResult> rs;
  // What a NaN loss used to become: null.
  std::string text = to_json(tiny_config(), synthetic_results());
  const std::string loss = "\"final_loss\": 0.0";
  REQUIRE(text.find(loss) != std::string::npos);
  text.replace(text.find(loss), loss.size(), "\"final_loss\": null");
  CHECK_THROWS_WITH(from_json(text, &cfg, &rs),
                    "results.json: cannot read it: [json.exception.type_error.302] type must be number, but is null");
  CHECK_THROWS_WITH(from_json("{\"results\": []}", &cfg, &rs),
                    "results.json: cannot read it: [json.exception.out_of_range.403] key 'config' not found");
  CHECK_THROWS_AS(from_json("not json", &cfg, &rs), Error);
  CHECK_THROWS_WITH(from_json("not json", &cfg, &rs), Catch::Matchers::StartsWith("results.json: cannot read it: "));
}
