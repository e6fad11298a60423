// Tests ops/cuda_temporaries.{h,cpp}: the rules for the CUDA ops' copies and workspaces, and that a
// Meta dry run imitating CUDA makes those allocations (in every build: no GPU, no CUDA). That the
// imitation equals the emulated device's allocations event by event is tested by
// tests/nn/cuda/gpt_test.cpp and tests/checkpoint/cuda/planner_test.cpp.
#include <catch2/catch.hpp>

#include <vector>

#include "kernels/cuda/workspace_sizes.h"
#include "ops/cuda_temporaries.h"
#include "remat.h"

using namespace remat;
namespace ct = remat::ops::cuda_temporaries;
namespace kc = remat::kernels::cuda;

namespace {

// The allocations (+) and frees (-) of `body` on Meta, counting like `imitated`.
template <class F>
std::vector<int64_t> meta_events(DeviceType imitated, F body) {
  DryRun dry(imitated);
  std::vector<int64_t> deltas;
  {
    MemoryTracker tracker(Device{kMeta});
    body();
    for (const MemoryEvent& e : tracker.timeline()) deltas.push_back(e.delta);
  }
  return deltas;
}

Tensor meta(const Shape& sizes, ScalarType dtype = kFloat) { return empty(sizes, TensorOptions().dtype(dtype).device(kMeta)); }

}  // namespace

TEST_CASE("CUDA GEMM copies: an operand neither row- nor column-major, or batch dims no one stride steps", "[ops]") {
  const Tensor out = meta({2, 3, 8, 8});
  // q @ k^T of attention: [B, T, H, D] viewed as [B, H, T, D]: the batch dims (B, H) do not collapse.
  const Tensor q = transpose(meta({2, 8, 3, 8}), 1, 2), k = transpose(transpose(meta({2, 8, 3, 8}), 1, 2), 2, 3);
  const ct::GemmCopies c = ct::gemm_copies(out, q, k);
  CHECK_FALSE(c.a_layout);
  CHECK_FALSE(c.b_layout);
  CHECK(c.a_batch);
  CHECK(c.b_batch);
  CHECK(ct::collapsed_batch_stride(meta({2, 3, 8, 8}), 64) == 64);
  CHECK(ct::collapsed_batch_stride(q, 64) == -1);
  const Tensor expanded = expand(meta({1, 8}), {8, 8});  // stride 0 rows: neither layout
  const ct::GemmCopies e = ct::gemm_copies(meta({8, 8}), expanded, meta({8, 8}));
  CHECK(e.a_layout);
  CHECK_FALSE(e.a_batch);
  CHECK_FALSE(e.b_layout);
}

TEST_CASE("Meta imitating CUDA: bmm allocates the CUDA GEMM's copies after its output; the CPU's do not", "[ops]") {
  const auto run = [] {
    Tensor q = transpose(meta({2, 8, 3, 8}), 1, 2), k = transpose(transpose(meta({2, 8, 3, 8}), 1, 2), 2, 3);
    Tensor s = bmm(q, k);  // 4-D strided operands, as they are (matmul would copy them first)
  };
  const std::vector<int64_t> cuda = meta_events(kCUDA, run);
  const std::vector<int64_t> cpu = meta_events(kCPU, run);
  // Inputs (two), the output, the two copies (512-byte blocks of 1536 bytes each), their frees.
  const int64_t in = cuda_round_size(2 * 8 * 3 * 8 * 4), o = cuda_round_size(2 * 3 * 8 * 8 * 4);
  REQUIRE(cuda.size() >= 7);
  CHECK(std::vector<int64_t>(cuda.begin(), cuda.begin() + 7) == std::vector<int64_t>{in, in, o, in, in, -in, -in});
  CHECK(cpu.size() < cuda.size());
}

TEST_CASE("CUDA reduction: its layout, and a workspace when few long rows are split", "[ops]") {
  const ct::ReduceLayout rows = ct::reduce_layout(meta({4, 100000}), {false, true}, 4);
  CHECK_FALSE(rows.permuted_copy);
  CHECK(rows.outer == 4);
  CHECK(rows.red_n == 100000);
  CHECK(rows.inner == 1);
  const ct::ReduceLayout split = ct::reduce_layout(meta({3, 5, 7}), {true, false, true}, 5);
  CHECK(split.permuted_copy);  // reduced dims not one run: copied with them last
  CHECK(split.outer == 5);
  CHECK(split.red_n == 21);
  const size_t ws = kc::reduce_workspace_bytes(kFloat, 4, 100000, 1);
  REQUIRE(ws > 0);
  const std::vector<int64_t> events = meta_events(kCUDA, [] { Tensor s = sum(meta({4, 100000}), Shape{1}); });
  // input, output, workspace (int64 words, in blocks), its free
  REQUIRE(events.size() >= 4);
  CHECK(events[2] == static_cast<int64_t>(cuda_round_size(static_cast<size_t>(ct::workspace_words(ws)) * 8)));
  CHECK(events[3] == -events[2]);
  CHECK(meta_events(kCPU, [] { Tensor s = sum(meta({4, 100000}), Shape{1}); }).size() == events.size() - 2);
}

TEST_CASE("Meta imitating CUDA: cross_entropy, embedding and layer_norm backward make CUDA's workspaces and flag",
          "[ops]") {
  const int64_t flag = static_cast<int64_t>(cuda_round_size(8 * ct::kIndexErrorWords));
  {
    const std::vector<int64_t> e = meta_events(kCUDA, [] {
      Tensor logits = meta({16, 10}), targets = meta({16}, kLong);
      Tensor loss = cross_entropy(logits, targets);
    });
    // logits, targets, loss, workspace (16 floats, at least 8 bytes), flag; the two frees
    const int64_t ws = static_cast<int64_t>(cuda_round_size(8 * ct::workspace_words(kc::cross_entropy_workspace_bytes(kFloat, 16))));
    REQUIRE(e.size() >= 7);
    CHECK(std::vector<int64_t>(e.begin() + 2, e.begin() + 7) == std::vector<int64_t>{512, ws, flag, -flag, -ws});
  }
  {
    const std::vector<int64_t> e = meta_events(kCUDA, [] {
      Tensor w = meta({50, 8}), idx = meta({4, 6}, kLong);
      Tensor out = embedding(w, idx);
    });
    REQUIRE(e.size() >= 5);
    CHECK(std::vector<int64_t>(e.begin() + 2, e.begin() + 5) == std::vector<int64_t>{512 * 2, flag, -flag});
  }
  {
    const std::vector<int64_t> e = meta_events(kCUDA, [] {
      Tensor x = meta({64, 32}), w = meta({32}), b = meta({32});
      auto [y, mean, rstd] = native_layer_norm(x, {32}, w, b, 1e-5);
      auto grads = native_layer_norm_backward(y, x, {32}, mean, rstd, w, b);
    });
    const int64_t ws = static_cast<int64_t>(cuda_round_size(8 * ct::workspace_words(kc::norm_backward_workspace_bytes(kFloat, 64, 32))));
    bool found = false;
    for (size_t i = 0; i + 1 < e.size(); ++i) found = found || (e[i] == ws && e[i + 1] == -ws);
    CHECK(found);
  }
}
