// Tests ops/gemm_copies.{h,cpp}: each backend's plan of the GEMM's operand copies (which operands,
// in what order), the one function that makes them, and the Meta kernels' copies, which follow
// the plan of the backend a dry run counts like.
#include <catch2/catch.hpp>

#include <vector>

#include "ops/gemm_copies.h"
#include "remat.h"
#include "tests/testing/op_testing.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;
using ops::GemmCopyPlan;

namespace {

std::vector<GemmCopyPlan::Operand> steps(const GemmCopyPlan& p) {
  return std::vector<GemmCopyPlan::Operand>(p.steps.begin(), p.steps.begin() + p.size);
}

// attention's q and k^T on [B, T, H, D] viewed as [B, H, T, D]: batch dims no one stride steps
Tensor q() { return transpose(meta({2, 8, 3, 8}), 1, 2); }
Tensor k_t() { return transpose(transpose(meta({2, 8, 3, 8}), 1, 2), 2, 3); }

}  // namespace

TEST_CASE("GEMM copy plans: the CPU copies operands of no layout, CUDA those and unsteppable batch dims",
          "[gemm_copies]") {
  using V = std::vector<GemmCopyPlan::Operand>;
  const Tensor expanded = expand(meta({1, 8}), {8, 8});  // stride-0 rows: neither row- nor column-major
  CHECK(steps(ops::cpu_gemm_copies(meta({8, 8}), expanded, meta({8, 8}))) == V{GemmCopyPlan::kA});
  CHECK(steps(ops::cuda_gemm_copies(meta({8, 8}), expanded, meta({8, 8}))) == V{GemmCopyPlan::kA});
  CHECK(steps(ops::cpu_gemm_copies(meta({8, 8}), expanded, expanded)) == V{GemmCopyPlan::kA, GemmCopyPlan::kB});
  CHECK(steps(ops::cpu_gemm_copies(meta({2, 3, 8, 8}), q(), k_t())).empty());
  CHECK(steps(ops::cuda_gemm_copies(meta({2, 3, 8, 8}), q(), k_t())) == V{GemmCopyPlan::kA, GemmCopyPlan::kB});
  // CUDA's order: the layout copies first, then the batch ones
  const Tensor b_expanded = expand(meta({1, 8, 1}), {3, 8, 8});
  const Tensor a_batch = transpose(meta({8, 3, 8}), 0, 1);  // [3, 8, 8], batch stride 8, rows 24: collapses
  CHECK(steps(ops::cuda_gemm_copies(meta({3, 8, 8}), a_batch, b_expanded)) == V{GemmCopyPlan::kB});
  const Tensor a4 = q();
  const Tensor b4 = expand(meta({1, 1, 8, 1}), {2, 3, 8, 8});
  CHECK(steps(ops::cuda_gemm_copies(meta({2, 3, 8, 8}), a4, b4)) == V{GemmCopyPlan::kB, GemmCopyPlan::kA});
}

TEST_CASE("GEMM copy plans: nothing is copied when no GEMM runs", "[gemm_copies]") {
  const Tensor expanded = expand(meta({1, 8}), {8, 8});
  for (auto plan : {&ops::cpu_gemm_copies, &ops::cuda_gemm_copies}) {
    CHECK(plan(meta({0, 8}), expand(meta({1, 8}), {0, 8}), expanded).size == 0);  // an empty output
    CHECK(plan(meta({8, 8}), expand(meta({1, 0}), {8, 0}), meta({0, 8})).size == 0);  // an empty sum
  }
}

TEST_CASE("make_gemm_copies replaces each planned operand by its copy, in the plan's order", "[gemm_copies]") {
  GemmCopyPlan plan;
  plan.add(GemmCopyPlan::kB);
  plan.add(GemmCopyPlan::kA);
  const Tensor a0 = meta({2, 3}), b0 = meta({3, 4});
  std::vector<Shape> order;
  const ops::GemmOperands g = ops::make_gemm_copies(plan, a0, b0, [&](const Tensor& t) {
    order.push_back(t.sizes());
    return meta(t.sizes());
  });
  CHECK(order == std::vector<Shape>{{3, 4}, {2, 3}});
  CHECK_FALSE(g.a.is_same(a0));
  CHECK_FALSE(g.b.is_same(b0));
  CHECK(g.a.sizes() == a0.sizes());
  CHECK(ops::make_gemm_copies(GemmCopyPlan{}, a0, b0, [](const Tensor& t) { return t; }).a.is_same(a0));
}

TEST_CASE("meta_gemm_copies: the copies of the plan of the backend the dry run counts like", "[gemm_copies]") {
  const Tensor out = meta({2, 3, 8, 8}), a = q(), b = k_t();
  const auto copies = [&](Device) { ops::meta_gemm_copies(out, a, b); };
  const int64_t bytes = cuda_round_size(2 * 8 * 3 * 8 * 4);
  // CUDA: a's copy, b's copy, both freed when the GEMM returns; the CPU reads both as they are
  CHECK(allocation_deltas(Device{kMeta}, kCUDA, copies) == std::vector<int64_t>{bytes, bytes, -bytes, -bytes});
  CHECK(allocation_deltas(Device{kMeta}, kCPU, copies).empty());
}
