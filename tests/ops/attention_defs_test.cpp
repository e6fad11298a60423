// Tests ops/attention_defs.h: the fused attention ops get their schemas from their Defs (the
// flash op and its backward with CPU and Meta kernels, the efficient op and its backward with
// Meta kernels here and CUDA ones under --config=cuda); the Meta kernels raise the CPU kernels'
// errors; and a Meta dry run allocates what the CPU kernels allocate, event by event, from the
// buffers the Defs declare (the copies of operands whose head dim is strided included).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/attention_defs.h"
#include "remat.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

namespace {

// q [1, 2, 5, E], k and v [1, 2, 7, E] with E = 4; a head dim of stride 2 (a copy) when strided.
Tensor qkv(Device d, int64_t rows, bool strided) {
  return strided ? slice(on(d, {1, 2, rows, 8}), 3, 0, 8, 2) : on(d, {1, 2, rows, 4});
}

template <bool kStrided>
Tensor flash_forward(Device d) {
  return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(qkv(d, 5, kStrided), qkv(d, 7, false),
                                                                 qkv(d, 7, kStrided), 0.0, true));
}
template <bool kStrided>
Tensor flash_backward(Device d) {
  Tensor q = qkv(d, 5, false), k = qkv(d, 7, kStrided), v = qkv(d, 7, false);
  Tensor out = on(d, {1, 2, 5, 4}), lse = on(d, {1, 2, 5});
  return std::get<1>(
      _scaled_dot_product_flash_attention_for_cpu_backward(qkv(d, 5, kStrided), q, k, v, out, lse, 0.0, false));
}

}  // namespace

TEST_CASE("every Def of ops/attention_defs.h has its schema and its kernels", "[attention][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_flash_attention_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta}) == 2);
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_efficient_attention_def(f); }, {DispatchKey::Meta}) ==
        2);
}

TEST_CASE("the flash op's Meta kernels raise the CPU kernels' errors, naming the op", "[attention][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"dropout", "aten::_scaled_dot_product_flash_attention_for_cpu",
       [](Device d) {
         _scaled_dot_product_flash_attention_for_cpu(qkv(d, 5, false), qkv(d, 7, false), qkv(d, 7, false), 0.1);
       }},
      {"an attn_mask", "aten::_scaled_dot_product_flash_attention_for_cpu",
       [](Device d) {
         _scaled_dot_product_flash_attention_for_cpu(qkv(d, 5, false), qkv(d, 7, false), qkv(d, 7, false), 0.0, false,
                                                     on(d, {5, 7}));
       }},
      {"key and value of other shapes", "aten::_scaled_dot_product_flash_attention_for_cpu",
       [](Device d) {
         _scaled_dot_product_flash_attention_for_cpu(qkv(d, 5, false), qkv(d, 7, false), qkv(d, 6, false));
       }},
      {"an integer query", "aten::_scaled_dot_product_flash_attention_for_cpu",
       [](Device d) {
         _scaled_dot_product_flash_attention_for_cpu(on(d, {1, 2, 5, 4}, kLong), on(d, {1, 2, 7, 4}, kLong),
                                                     on(d, {1, 2, 7, 4}, kLong));
       }},
      {"a logsumexp of the wrong dtype", "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
       [](Device d) {
         Tensor q = qkv(d, 5, false), k = qkv(d, 7, false);
         _scaled_dot_product_flash_attention_for_cpu_backward(on(d, {1, 2, 5, 4}), q, k, k, on(d, {1, 2, 5, 4}),
                                                              on(d, {1, 2, 5}, kDouble), 0.0, false);
       }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the flash op's CPU kernels allocate, event by event",
          "[attention][structured]") {
  check_meta_allocates_as(Device{kCPU}, {
                                            {"forward, unit-stride head dims", &flash_forward<false>},
                                            {"forward, strided q and v (copied)", &flash_forward<true>},
                                            {"backward, unit-stride head dims", &flash_backward<false>},
                                            {"backward, strided grad_out and k (copied)", &flash_backward<true>},
                                        });
}

TEST_CASE("the efficient op's Meta kernels allocate the buffers its Def declares", "[attention][structured]") {
  DryRun dry(kCUDA);
  const Device d{kMeta};
  MemoryTracker tracker(d);
  auto [out, lse, seed, offset] =
      _scaled_dot_product_efficient_attention(qkv(d, 5, false), qkv(d, 7, false), qkv(d, 7, true), Tensor(), true);
  CHECK(out.sizes() == Shape{1, 2, 5, 4});
  CHECK(out.strides() == Shape{40, 4, 8, 1});  // [B, L, H, E] in memory
  CHECK(lse.sizes() == Shape{1, 2, 32});       // L rounded up to kAttentionLseAlign
  CHECK(seed.device().is_cpu());
  CHECK(offset.device().is_cpu());
  CHECK(tracker.allocation_sizes().size() == 5);  // q, k, the strided v's base, out, lse: nothing copied
}
