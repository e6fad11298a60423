// Tests bench/op_bounds.{h,cpp} (no PyTorch counterpart): the throughput of remat's vectorised
// tanh, erf, exp, exp16 and Philox, and each arithmetic-bound op of `ops` set against it.
#include "bench/op_bounds.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "remat.h"

using namespace remat;
using namespace remat::bench;
using Catch::Matchers::Contains;

TEST_CASE("op bounds: every function's rate is measured, on one thread and on two", "[bench]") {
  for (int threads : {1, 2}) {
    INFO(threads << " thread(s)");
    const FunctionRates r = measure_function_rates(threads, /*min_sample_s=*/0.002, /*samples=*/2);
    for (const char* f : {"tanh", "erf", "exp", "exp16", "philox"}) {
      INFO(f);
      CHECK(std::isfinite(function_rate(r, f)));
      CHECK(function_rate(r, f) > 0);
    }
    const std::string text = rates_text(r, threads);
    CHECK_THAT(text, Contains("tanh   (remat's vectorised, L1-resident, " + std::to_string(threads) + " thread(s) at once)"));
    CHECK_THAT(text, Contains("Gwords/s"));
  }
}

TEST_CASE("op bounds: an unknown function is refused by name") {
  CHECK_THROWS_WITH(function_rate(FunctionRates{}, "sin"), "ops: no measured function 'sin' (tanh, erf, exp, exp16 or philox)");
}

TEST_CASE("op bounds: which ops arithmetic bounds, and by how many calls an element") {
  const auto gelu = arithmetic_bound("gelu (tanh)");
  REQUIRE(gelu);
  CHECK(gelu->function == "exp16");  // x / (1 + exp(-2u)): kernels/cpu/activation.h
  CHECK(gelu->calls_per_element == 1);
  const auto ce = arithmetic_bound("cross_entropy fwd+bwd");
  REQUIRE(ce);
  CHECK(ce->function == "exp16");
  CHECK(ce->calls_per_element == 2);  // the forward's exp, the backward's softmax
  CHECK(arithmetic_bound("native_dropout (p=0.1)")->function == "philox");
  CHECK(arithmetic_bound("gelu")->function == "erf");
  CHECK(arithmetic_bound("softmax(dim=-1) of masked scores")->function == "exp16");  // the function its kernel calls
  CHECK(arithmetic_bound("gelu_backward (tanh)")->function == "exp16");
  CHECK(arithmetic_bound("silu")->function == "exp");
  CHECK_FALSE(arithmetic_bound("add  (a + b)"));
  CHECK_FALSE(arithmetic_bound("native_dropout_backward"));  // memory-bound: no Philox
}

TEST_CASE("op bounds: a row's bound is its calls over the function's rate; the table and JSON show it") {
  FunctionRates rates;
  rates.exp16 = 2e9;
  rates.tanh = 1e9;
  OpRow ce{"cross_entropy fwd+bwd", "bf16", {1000, 500}, 1};
  ce.remat_ms = 1.0;
  ce.torch_ms = 2.0;
  attach_bound(ce, rates);
  CHECK(ce.bound_function == "exp16");
  CHECK(ce.bound_ms == Approx(2.0 * 500000 / 2e9 * 1e3));  // 0.5 ms
  OpRow add{"add  (a + b)", "f32", {1000, 500}, 1};
  add.remat_ms = 1.0;
  attach_bound(add, rates);
  CHECK(add.bound_function.empty());
  CHECK(add.bound_ms < 0);
  OpRow dropout{"native_dropout (p=0.1)", "f32", {1000, 500}, 1};  // Philox not measured: no bound
  attach_bound(dropout, rates);
  CHECK(dropout.bound_ms < 0);

  const std::string table = bounds_table({ce, add, dropout});
  CHECK_THAT(table, Contains("% bound"));
  CHECK_THAT(table, Contains("cross_entropy fwd+bwd"));
  CHECK_THAT(table, Contains("exp16        1.00     0.500       50%       25%"));
  CHECK(table.find("add  (a + b)") == std::string::npos);
  CHECK(bounds_table({add}).empty());

  const auto doc = nlohmann::json::parse(rows_json({ce, add}, 1, 3, 0.01, "wall"));
  CHECK(doc["rows"][0]["bound_function"] == "exp16");
  CHECK(doc["rows"][0]["bound_ms"].get<double>() == Approx(0.5));
  CHECK(doc["rows"][0]["pct_bound"].get<double>() == Approx(50.0));
  for (const char* key : {"bound_function", "bound_ms", "pct_bound"}) CHECK(doc["rows"][1][key].is_null());
}
