// Tests ops/fused_optimizer_defs.h: _fused_adamw_ and _fused_sgd_ get their schemas from their
// Defs and have CPU and Meta kernels; the in-place variant bumps the version of exactly the
// tensors the schema writes (structured::written_arguments); the Meta kernels raise the CPU
// kernels' errors; a Meta dry run allocates what the CPU kernels allocate, event by event (the
// gradient's copy, fused_optimizer_grad); and a dry run counting like CUDA refuses what the CUDA
// kernel refuses (a BFloat16 parameter, maximize), which the Meta kernel once accepted.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/fused_optimizer_defs.h"
#include "ops/pointwise_defs.h"
#include "remat.h"
#include "tests/testing/fused_optimizer_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;
using ops::structured::written_arguments;

static_assert(written_arguments(ops::structured__fused_adamw_::inplace_schema) == 0b111);
static_assert(written_arguments(ops::structured__fused_sgd_::inplace_schema) == 0b101);  // self, momentum_buffer
static_assert(written_arguments("(Tensor(a!) self, Tensor other, *, float alpha=1) -> Tensor(a!)") == 0b1);
static_assert(written_arguments("(Tensor a, *, Tensor(b!) out) -> Tensor(b!)") == 0b10);  // '*' is no argument
static_assert(written_arguments("(Tensor self) -> Tensor") == 0);

TEST_CASE("every Def of ops/fused_optimizer_defs.h has its schema and CPU and Meta kernels", "[fused][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_fused_optimizer_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta}) == 2);
}

TEST_CASE("the fused optimizers bump the versions of the tensors their schemas write, on CPU and Meta",
          "[fused][structured]") {
  for (Device d : {Device{kCPU}, Device{kMeta}}) {
    INFO(d.str());
    // the versions' increments (zeros() itself bumps on the CPU)
    auto bumps = [](const std::vector<Tensor>& ts, const std::function<void()>& call) {
      std::vector<int64_t> before;
      for (const Tensor& t : ts) before.push_back(static_cast<int64_t>(t._version()));
      call();
      std::vector<int64_t> r;
      for (size_t i = 0; i < ts.size(); ++i) r.push_back(static_cast<int64_t>(ts[i]._version()) - before[i]);
      return r;
    };
    Tensor p = on(d, {3}), m = on(d, {3}), v = on(d, {3}), g = on(d, {3});
    CHECK(bumps({p, m, v, g}, [&] { _fused_adamw_(p, m, v, g, 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, false); }) ==
          std::vector<int64_t>{1, 1, 1, 0});
    Tensor q = on(d, {3}), buf = on(d, {3}), gq = on(d, {3});
    CHECK(bumps({q, gq, buf}, [&] { _fused_sgd_(q, gq, buf, 0.0, 0.9, 0.1, 0.0, false, false, false); }) ==
          std::vector<int64_t>{1, 0, 1});
    // no buffer (momentum 0)
    CHECK(bumps({q, gq}, [&] { _fused_sgd_(q, gq, Tensor(), 0.0, 0.0, 0.1, 0.0, false, false, false); }) ==
          std::vector<int64_t>{1, 0});
  }
}

TEST_CASE("the fused optimizers' Meta kernels raise the CPU kernels' errors, naming the op", "[fused][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"a gradient of another shape", "aten::_fused_adamw_",
       [](Device d) {
         Tensor p = on(d, {3}), m = on(d, {3}), v = on(d, {3});
         _fused_adamw_(p, m, v, on(d, {4}), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, false);
       }},
      {"step 0", "aten::_fused_adamw_",
       [](Device d) {
         Tensor p = on(d, {3}), m = on(d, {3}), v = on(d, {3});
         _fused_adamw_(p, m, v, on(d, {3}), 1e-3, 0.9, 0.999, 0.0, 1e-8, 0, false);
       }},
      {"a Half parameter", "aten::_fused_adamw_",
       [](Device d) {
         Tensor p = on(d, {3}, kHalf), m = on(d, {3}, kHalf), v = on(d, {3}, kHalf);
         _fused_adamw_(p, m, v, on(d, {3}, kHalf), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, false);
       }},
      {"momentum without a buffer", "aten::_fused_sgd_",
       [](Device d) {
         Tensor p = on(d, {3});
         _fused_sgd_(p, on(d, {3}), Tensor(), 0.0, 0.9, 0.1, 0.0, false, false, false);
       }},
      {"a strided momentum buffer", "aten::_fused_sgd_",
       [](Device d) {
         Tensor p = on(d, {3, 2});
         _fused_sgd_(p, on(d, {3, 2}), on(d, {2, 3}).t(), 0.0, 0.9, 0.1, 0.0, false, false, false);
       }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU fused optimizers allocate, event by event",
          "[fused][structured]") {
  check_meta_allocates_as(Device{kCPU}, fused_optimizer_cases());
}

TEST_CASE("a Meta dry run counting like CUDA refuses what _fused_adamw_'s CUDA kernel refuses", "[fused][structured]") {
  // Before: the CUDA kernel alone checked these, so a dry run counting like CUDA accepted them.
  auto call = [](ScalarType dtype, bool maximize) {
    const Device d{kMeta};
    Tensor p = on(d, {3}, dtype), m = on(d, {3}, dtype), v = on(d, {3}, dtype);
    _fused_adamw_(p, m, v, on(d, {3}, dtype), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, maximize);
  };
  {
    DryRun dry(kCUDA);
    CHECK(error_of([&] { call(kBFloat16, false); }) ==
          "aten::_fused_adamw_: a BFloat16 parameter is not supported on CUDA (its moments would be BFloat16; use "
          "fused(false), or a Float parameter)");
    CHECK(error_of([&] { call(kFloat, true); }) ==
          "aten::_fused_adamw_: maximize=True is not supported on CUDA (use fused(false))");
    CHECK(error_of([&] { call(kFloat, false); }).empty());
  }
  DryRun dry(kCPU);  // the CPU kernel takes both
  CHECK(error_of([&] { call(kBFloat16, false); }).empty());
  CHECK(error_of([&] { call(kFloat, true); }).empty());
}
