// Tests checkpoint/runtime_estimator.{h,cpp}: the roofline's exact figures, the benchmark's
// bookkeeping (what it measures, that it measures each call once, that it leaves the caller's
// dispatch modes and random streams alone), and the error paths. Never a timing: a benchmarked figure is
// only checked to be positive.
#include <catch2/catch.hpp>

#include "checkpoint/output_storage.h"
#include "remat.h"
#include "tests/testing/matchers.h"

using namespace remat;
using Catch::Matchers::Contains;
using remat::testing::What;

namespace {

// The call `op` on `args` as a planner's dry run sees it: arguments and what the call returned.
struct Call {
  OperatorHandle op;
  std::vector<IValue> args, outputs;
};
Call call(const std::string& name, std::vector<IValue> args) {
  OperatorHandle op = find_op(name);
  std::vector<IValue> out = op.call(args);
  return {op, std::move(args), std::move(out)};
}

struct CountingMode : DispatchMode {
  int calls = 0;
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    ++calls;
    return op.call(args);
  }
};

}  // namespace

TEST_CASE("runtime estimator: the cost model is max(FLOPs / peak, bytes moved / bandwidth)", "[estimator]") {
  const TensorOptions meta = TensorOptions().device(Device{kMeta});
  RuntimeEstimator est(EstimateMode::kCostModel, Device{kCPU}, /*peak_flops=*/1e9, /*bandwidth=*/1e9);
  CHECK(est.mode() == EstimateMode::kCostModel);
  CHECK(std::string(toString(est.mode())) == "operator-level-cost-model");
  // mm [64, 32] @ [32, 16]: 65536 FLOPs; (2048 + 512 + 1024) floats = 14336 bytes moved.
  Call mm = call("aten::mm", {empty({64, 32}, meta), empty({32, 16}, meta)});
  CHECK(est.estimate(mm.op, mm.args, mm.outputs) == Approx(65536 / 1e9));
  // An elementwise op is priced by bytes: gelu of [64, 32] reads and writes 8192 bytes each.
  Call gelu = call("aten::gelu", {empty({64, 32}, meta), std::string("none")});
  CHECK(est.estimate(gelu.op, gelu.args, gelu.outputs) == Approx(16384 / 1e9));
  // A view allocates nothing and costs nothing.
  Call t = call("aten::transpose", {empty({64, 32}, meta), int64_t{0}, int64_t{1}});
  CHECK(new_output_bytes(t.args, t.outputs) == 0);
  CHECK(est.estimate(t.op, t.args, t.outputs) == 0);
  CHECK(est.benchmarked_calls() == 0);

  RuntimeEstimator defaults(EstimateMode::kCostModel, Device{kCUDA});
  CHECK(defaults.peak_flops() == kCUDAPeakFlops);
  CHECK(defaults.bandwidth() == kCUDABandwidth);
  // On CUDA a call is priced at the peak of its dtype: a compute-bound mm of 2 * 4096^3 FLOPs.
  for (auto [dtype, peak] : {std::pair{kFloat, kCUDAPeakFlops}, std::pair{kBFloat16, kCUDAPeakFlopsBF16},
                             std::pair{kDouble, kCUDAPeakFlopsF64}}) {
    INFO(toString(dtype));
    const TensorOptions m = TensorOptions().dtype(dtype).device(Device{kMeta});
    Call big = call("aten::mm", {empty({4096, 4096}, m), empty({4096, 4096}, m)});
    CHECK(defaults.estimate(big.op, big.args, big.outputs) == Approx(2.0 * 4096 * 4096 * 4096 / peak));
    CHECK(cuda_peak_flops(dtype) == peak);
    // A peak given by the caller is the peak of every dtype.
    RuntimeEstimator given(EstimateMode::kCostModel, Device{kCUDA}, /*peak_flops=*/1e14);
    CHECK(given.estimate(big.op, big.args, big.outputs) == Approx(2.0 * 4096 * 4096 * 4096 / 1e14));
  }
  RuntimeEstimator cpu_defaults(EstimateMode::kCostModel, Device{kCPU});  // measured (cost_model_defaults.h)
  CHECK(cpu_defaults.peak_flops() == cpu_machine_peaks().peak_flops);
  CHECK(cpu_defaults.bandwidth() == cpu_machine_peaks().bandwidth);
}

TEST_CASE("runtime estimator: a benchmark times each distinct call once, from Meta arguments", "[estimator]") {
  const TensorOptions meta = TensorOptions().device(Device{kMeta});
  RuntimeEstimator est(EstimateMode::kBenchmark, Device{kCPU});
  CHECK(std::string(toString(est.mode())) == "operator-level-benchmark");
  Call mm = call("aten::mm", {empty({64, 32}, meta), empty({32, 16}, meta)});
  const double s = est.estimate(mm.op, mm.args, mm.outputs);
  CHECK(s > 0);
  CHECK(est.benchmarked_calls() == 1);
  CHECK(est.benchmark_seconds() > 0);
  CHECK(est.estimate(mm.op, mm.args, mm.outputs) == s);  // looked up, not timed again
  CHECK(est.benchmarked_calls() == 1);
  // Another geometry is another call: a transposed operand (strides [1, 64]).
  Call mm_t = call("aten::mm", {empty({32, 64}, meta).transpose(0, 1), empty({32, 16}, meta)});
  CHECK(est.estimate(mm_t.op, mm_t.args, mm_t.outputs) > 0);
  CHECK(est.benchmarked_calls() == 2);
  CHECK(RuntimeEstimator::call_signature(mm.op, mm.args) == "aten::mm(Float[64, 32]:[32, 1], Float[32, 16]:[16, 1])");
  CHECK(RuntimeEstimator::call_signature(mm_t.op, mm_t.args) ==
        "aten::mm(Float[64, 32]:[1, 64], Float[32, 16]:[16, 1])");
  // Views are not run.
  Call t = call("aten::transpose", {empty({64, 32}, meta), int64_t{0}, int64_t{1}});
  CHECK(est.estimate(t.op, t.args, t.outputs) == 0);
  CHECK(est.benchmarked_calls() == 2);
  // Index and mask arguments are filled so that the call is valid (zeros: index 0, mask off).
  Call emb = call("aten::embedding", {empty({11, 8}, meta), empty({4, 5}, TensorOptions().dtype(kLong).device(Device{kMeta}))});
  CHECK(est.estimate(emb.op, emb.args, emb.outputs) > 0);
}

TEST_CASE("runtime estimator: a benchmark leaves the caller's dispatch modes and random streams alone",
          "[estimator]") {
  RuntimeEstimator est(EstimateMode::kBenchmark, Device{kCPU});
  Tensor x = rand({256});
  Call drop = call("aten::dropout", {x, 0.5, true, static_cast<Generator*>(nullptr)});
  auto mode = std::make_shared<CountingMode>();
  const RngState before = default_generator().get_state();
  {
    DispatchModeGuard guard(mode);
    CHECK(est.estimate(drop.op, drop.args, drop.outputs) > 0);
  }
  CHECK(mode->calls == 0);  // the benchmark's runs (and the fills) went past the mode
  CHECK(default_generator().get_state() == before);  // a generator of its own
}

TEST_CASE("runtime estimator: error paths name the mode, the device and the call", "[estimator][errors]") {
  REQUIRE_THROWS_MATCHES(RuntimeEstimator(EstimateMode::kBenchmark, Device{kMeta}), Error,
                         What(Contains("operator-level-benchmark times calls on a real device; nothing runs on meta")));
  REQUIRE_THROWS_MATCHES(RuntimeEstimator(EstimateMode::kCostModel, Device{kCPU}, -1.0, 0.0), Error,
                         What(Contains("peak_flops and bandwidth must be >= 0 (0: the defaults), got -1 and 0")));
  if (!cuda_is_available()) {
    REQUIRE_THROWS_MATCHES(RuntimeEstimator(EstimateMode::kBenchmark, Device{kCUDA}), Error,
                           What(Contains("operator-level-benchmark on cuda needs a CUDA device, and none is available")));
  }
  // A call that fails on real data says which call it was.
  const TensorOptions meta = TensorOptions().device(Device{kMeta});
  RuntimeEstimator est(EstimateMode::kBenchmark, Device{kCPU});
  Call mm = call("aten::mm", {empty({4, 3}, meta), empty({3, 2}, meta)});
  mm.args[1] = empty({5, 2}, meta);  // as no real call could have had it
  REQUIRE_THROWS_MATCHES(est.estimate(mm.op, mm.args, mm.outputs), Error,
                         What(Contains("RuntimeEstimator: operator-level-benchmark of aten::mm(Float[4, 3]:[3, 1], "
                                       "Float[5, 2]:[2, 1]) failed on cpu: ")));
}

TEST_CASE("runtime estimator: a benchmark times complex calls on fresh complex tensors", "[estimator]") {
  // the Llama's rotary product: complex64 operands (fresh_like draws both parts uniform in [0, 1))
  RuntimeEstimator est(EstimateMode::kBenchmark, Device{kCPU});
  Tensor a = view_as_complex(rand({4, 8, 2})), b = view_as_complex(rand({1, 8, 2}));
  Call m = call("aten::mul", {a, b});
  CHECK(m.outputs[0].toTensor().dtype() == kComplexFloat);
  CHECK(est.estimate(m.op, m.args, m.outputs) > 0);
}
