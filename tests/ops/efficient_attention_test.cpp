// Tests ops/efficient_attention.cpp in every build (no GPU, no CUDA): the fused CUDA attention's
// Meta kernels (its outputs' shapes, layouts and dtypes, its checks), and that
// scaled_dot_product_attention under FLASH_ATTENTION picks, on Meta, the fused op of the device a
// dry run counts like. tests/ops/cuda/attention_test.cpp tests the CUDA kernels.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::OpCounter;
using remat::testing::meta_empty;

namespace {
constexpr const char* kOp = "aten::_scaled_dot_product_efficient_attention";
constexpr const char* kBackwardOp = "aten::_scaled_dot_product_efficient_attention_backward";
constexpr const char* kCpuOp = "aten::_scaled_dot_product_flash_attention_for_cpu";
}  // namespace

TEST_CASE("efficient attention on Meta: PyTorch's output layout, a padded logsumexp, CPU philox tensors",
          "[attention][meta]") {
  for (ScalarType dtype : {kFloat, kDouble}) {
    Tensor q = meta_empty({2, 3, 33, 8}, dtype), k = meta_empty({2, 3, 5, 8}, dtype);
    auto [out, lse, seed, offset] = _scaled_dot_product_efficient_attention(q, k, k, Tensor(), true, 0.0, true);
    CHECK(out.sizes() == Shape{2, 3, 33, 8});
    CHECK(out.strides() == Shape{33 * 3 * 8, 8, 3 * 8, 1});
    CHECK(out.is_meta());
    CHECK(lse.sizes() == Shape{2, 3, 64});
    CHECK(lse.dtype() == dtype);
    CHECK(seed.dim() == 0);
    CHECK(seed.dtype() == kLong);
    CHECK(seed.device() == Device{kCPU});
    CHECK(offset.item() == 0);
    CHECK(std::get<1>(_scaled_dot_product_efficient_attention(q, k, k, Tensor(), false)).sizes() == Shape{2, 3, 0});
    auto [dq, dk, dv, dbias] =
        _scaled_dot_product_efficient_attention_backward(out, q, k, k, Tensor(), out, lse, seed, offset, 0.0, true);
    CHECK(dq.sizes() == q.sizes());
    CHECK(dq.strides() == out.strides());
    CHECK(dk.sizes() == k.sizes());
    CHECK(dk.strides() == Shape{5 * 3 * 8, 8, 3 * 8, 1});
    CHECK(dv.sizes() == k.sizes());
    CHECK_FALSE(dbias.defined());
  }
}

TEST_CASE("efficient attention on Meta checks its arguments as on CUDA", "[attention][meta][errors]") {
  Tensor q = meta_empty({1, 2, 3, 4}), k = meta_empty({1, 2, 5, 4});
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q, k, k, Tensor(), true, 0.5),
                      Contains(std::string(kOp) + ": dropout_p = 0.5 is not supported by remat's fused CUDA attention"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q, k, k, meta_empty({1, 2, 3, 5}), true),
                      Contains(std::string(kOp) + ": an attn_bias (got shape [1, 2, 3, 5]) is not supported"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(meta_empty({1, 2, 3, 4}, kBFloat16),
                                                              meta_empty({1, 2, 5, 4}, kBFloat16),
                                                              meta_empty({1, 2, 5, 4}, kBFloat16), Tensor(), true),
                      Contains("supports Float and Double inputs, but got query.dtype: BFloat16"));
  Tensor cpu = ones({1, 2, 3, 4});
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(cpu, cpu, cpu, Tensor(), true),
                      Contains(std::string("Could not run '") + kOp + "' with arguments from the 'CPU' backend"));
  auto fwd = _scaled_dot_product_efficient_attention(q, k, k, Tensor(), true);
  REQUIRE_THROWS_WITH(
      _scaled_dot_product_efficient_attention_backward(q, q, k, k, Tensor(), std::get<0>(fwd), meta_empty({1, 2, 3}),
                                                       std::get<2>(fwd), std::get<3>(fwd), 0.0),
      Contains(std::string(kBackwardOp) + ": expected a contiguous logsumexp of shape [1, 2, 32] and dtype Float"));
}

TEST_CASE("sdpa under FLASH_ATTENTION on Meta runs the fused op of the device the dry run counts like",
          "[attention][meta]") {
  auto fused_calls = [](DeviceType imitated) {
    DryRun dry(imitated);
    Tensor q = meta_empty({2, 3, 8, 4}).requires_grad_(true), k = meta_empty({2, 3, 8, 4}).requires_grad_(true);
    sdpa_kernel guard(SDPBackend::FLASH_ATTENTION);
    auto counter = std::make_shared<OpCounter>();
    DispatchModeGuard mode(counter);
    sum(scaled_dot_product_attention(q, k, k, true)).backward();
    CHECK(q.grad().sizes() == q.sizes());
    return counter;
  };
  auto cpu = fused_calls(kCPU);
  CHECK(cpu->count(kCpuOp) == 1);
  CHECK(cpu->count(kOp) == 0);
  auto cuda = fused_calls(kCUDA);
  CHECK(cuda->count(kOp) == 1);
  CHECK(cuda->count(kBackwardOp) == 1);
  CHECK(cuda->count(kCpuOp) == 0);
  // The CUDA op's limits hold on Meta counting like CUDA, and the message says so.
  DryRun dry(kCUDA);
  sdpa_kernel guard(SDPBackend::FLASH_ATTENTION);
  Tensor h = meta_empty({1, 1, 4, 2}, kHalf);
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(h, h, h),
                      Contains("cannot run these arguments: on CUDA it takes Float and Double, got Half"));
}
