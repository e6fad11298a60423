// Tests the CUDA kernels of ops/attention_defs.h: the efficient op and its backward have them,
// they raise the errors of the Meta kernels counting like CUDA (one meta function), and a Meta dry
// run counting like CUDA allocates what they allocate, event by event, from the buffers the Defs
// declare (the outputs, the CPU philox tensors; no copies, even of strided operands).
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "ops/attention_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

namespace {

// [1, 2, rows, 4]; a head dim of stride 2 when strided (read as it is: not copied).
Tensor qkv(Device d, int64_t rows, bool strided) {
  return strided ? slice(on(d, {1, 2, rows, 8}), 3, 0, 8, 2) : on(d, {1, 2, rows, 4});
}

template <bool kLogSumExp>
Tensor efficient_forward(Device d) {
  return std::get<0>(_scaled_dot_product_efficient_attention(qkv(d, 5, true), qkv(d, 7, false), qkv(d, 7, false),
                                                             Tensor(), kLogSumExp, 0.0, true));
}
Tensor efficient_backward(Device d) {
  Tensor q = qkv(d, 5, false), k = qkv(d, 7, true), v = qkv(d, 7, false);
  Tensor out = on(d, {1, 2, 5, 4}), lse = on(d, {1, 2, 32});
  Tensor seed = zeros({}, TensorOptions().dtype(kLong)), offset = zeros({}, TensorOptions().dtype(kLong));
  return std::get<1>(_scaled_dot_product_efficient_attention_backward(on(d, {1, 2, 5, 4}), q, k, v, Tensor(), out, lse,
                                                                      seed, offset, 0.0, false));
}

}  // namespace

TEST_CASE("the efficient attention Defs of ops/attention_defs.h have CUDA kernels", "[cuda][attention][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_efficient_attention_def(f); }, {DispatchKey::CUDA}) ==
        2);
}

TEST_CASE("the efficient op's CUDA kernels raise the errors of its Meta kernels counting like CUDA",
          "[cuda][attention][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto half = [](Device d) {
    _scaled_dot_product_efficient_attention(on(d, {1, 2, 5, 4}, kHalf), on(d, {1, 2, 7, 4}, kHalf),
                                            on(d, {1, 2, 7, 4}, kHalf), Tensor(), false);
  };
  const auto lse = [](Device d) {
    Tensor q = qkv(d, 5, false), seed = zeros({}, TensorOptions().dtype(kLong));
    _scaled_dot_product_efficient_attention_backward(q, q, q, q, Tensor(), q, on(d, {1, 2, 5}), seed, seed, 0.0,
                                                     false);
  };
  for (const auto& call : {std::function<void(Device)>(half), std::function<void(Device)>(lse)}) {
    const std::string on_cuda = error_of([&] { call(cuda0()); });
    CHECK_THAT(on_cuda, Catch::StartsWith("aten::_scaled_dot_product_efficient_attention"));
    DryRun dry(kCUDA);
    CHECK(error_of([&] { call(Device{kMeta}); }) == on_cuda);
  }
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the efficient op's CUDA kernels allocate, event by event",
          "[cuda][attention][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), {
                                       {"forward with log_sumexp", &efficient_forward<true>},
                                       {"forward without log_sumexp", &efficient_forward<false>},
                                       {"backward", &efficient_backward},
                                   });
}
