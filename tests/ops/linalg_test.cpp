// Tests ops/linalg.cpp: mm, bmm, addmm, matmul (every rank combination), linear (values on
// strided operands, gradients, bf16, Meta, errors) and their derivative rules.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {

// Reference product of [.., m, k] @ [.., k, n] by loops in double (same batch shape, or none).
std::vector<double> naive_mm(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  int64_t batch = a.numel() / (m * k);
  std::vector<double> out(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += x[p * m * k + i * k + q] * y[(b.dim() == 2 ? 0 : p * k * n) + q * n + j];
        out[p * m * n + i * n + j] = acc;
      }
  return out;
}

}  // namespace

TEST_CASE("mm: values", "[linalg]") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}), b = tensor({5, 6, 7, 8}, {2, 2});
  check_values(mm(a, b), {19, 22, 43, 50});
  check_values(a.mm(b), {19, 22, 43, 50});
  Tensor c = tensor({1, 2, 3, 4, 5, 6}, {2, 3}), d = tensor({1, 0, -1}, {3, 1});
  Tensor r = mm(c, d);
  REQUIRE(r.sizes() == Shape{2, 1});
  check_values(r, {-2, -2});
  // empty inner dim: zeros; empty outer dim: empty result
  check_values(mm(zeros({2, 0}), zeros({0, 3})), std::vector<double>(6, 0.0));
  REQUIRE(mm(zeros({0, 2}), zeros({2, 3})).sizes() == Shape{0, 3});
  CHECK(mm(tensor({1, 2}, {1, 2}, kDouble), tensor({3, 4}, {2, 1}, kDouble)).dtype() == kDouble);
}

TEST_CASE("mm: strided operands (transposed, stepped, offset, expanded) match the naive product", "[linalg]") {
  Tensor base = randn_seeded({6, 8}, 1);
  Tensor other = randn_seeded({8, 6}, 2);
  std::vector<Tensor> lhs = {base.slice(1, 0, 6),             // [6,6] rows of stride 8
                             other.t().slice(1, 0, 6),        // transposed
                             base.slice(1, 0, 8, 2).slice(1, 0, 3).expand({6, 3}).slice(1, 0, 3),
                             base.slice(0, 1, 4).slice(1, 2, 8),  // storage offset
                             tensor({1, 2, 3}, {1, 3}, kDouble).expand({5, 3})};
  for (const Tensor& a : lhs) {
    int64_t k = a.size(1);
    std::vector<Tensor> rhs = {randn_seeded({k, 4}, 3), randn_seeded({4, k}, 4).t(),
                               randn_seeded({k, 8}, 5).slice(1, 0, 8, 2), tensor({1, -1, 2, 0.5}, {1, 4}, kDouble).expand({k, 4})};
    for (const Tensor& b : rhs) {
      INFO("a " << str(a.sizes()) << " strides " << str(a.strides()) << ", b strides " << str(b.strides()));
      check_values(mm(a, b), naive_mm(a.contiguous(), b.contiguous()), 1e-12);
    }
  }
}

TEST_CASE("mm and bmm: large and batched products match the naive product", "[linalg]") {
  Tensor a = randn_seeded({70, 90}, 6), b = randn_seeded({90, 50}, 7);
  check_values(mm(a, b), naive_mm(a, b), 1e-10);
  check_values(mm(b.t(), a.t()), naive_mm(b.t().contiguous(), a.t().contiguous()), 1e-10);
  Tensor ba = randn_seeded({5, 7, 3}, 8), bb = randn_seeded({5, 3, 4}, 9);
  check_values(bmm(ba, bb), naive_mm(ba, bb), 1e-12);
  // batch-strided and transposed-within-batch operands
  Tensor bt = randn_seeded({5, 4, 3}, 10).transpose(1, 2);
  check_values(bmm(ba, bt), naive_mm(ba, bt.contiguous()), 1e-12);
  Tensor perm = randn_seeded({3, 5, 7}, 11).permute({1, 2, 0});  // [5,7,3], batch stride 7
  check_values(bmm(perm, bb), naive_mm(perm.contiguous(), bb), 1e-12);
  Tensor shared = randn_seeded({1, 3, 4}, 12).expand({5, 3, 4});  // batch stride 0
  check_values(bmm(ba, shared), naive_mm(ba, shared.contiguous()), 1e-12);
  // a large batch of large products (the GEMM gets all threads)
  Tensor la = randn_seeded({2, 130, 140}, 13, kFloat), lb = randn_seeded({2, 140, 120}, 14, kFloat);
  check_values(bmm(la, lb), naive_mm(la, lb), 1e-4);
}

TEST_CASE("addmm: bias broadcast to the product", "[linalg]") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}), b = tensor({5, 6, 7, 8}, {2, 2});
  check_values(addmm(tensor({100, 200}, {2}), a, b), {119, 222, 143, 250});
  check_values(addmm(tensor({100, 200}, {2, 1}), a, b), {119, 122, 243, 250});
  check_values(addmm(tensor({1, 2, 3, 4}, {2, 2}), a, b), {20, 24, 46, 54});
  check_values(addmm(scalar_tensor(1.0), a, b), {20, 23, 44, 51});
  check_values(addmm(tensor({1, 2, 3, 4}, {2, 2}).t(), a.t(), b), {27, 33, 40, 48});
}

TEST_CASE("matmul: every rank combination", "[linalg]") {
  Tensor v3 = tensor({1, 2, 3}, {3}), w3 = tensor({4, 5, 6}, {3});
  Tensor dot = matmul(v3, w3);
  CHECK(dot.dim() == 0);
  CHECK(dot.item() == 32);
  Tensor m23 = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor mv = matmul(m23, v3);
  REQUIRE(mv.sizes() == Shape{2});
  check_values(mv, {14, 32});
  Tensor vm = matmul(tensor({1, -1}, {2}), m23);
  REQUIRE(vm.sizes() == Shape{3});
  check_values(vm, {-3, -3, -3});
  REQUIRE(matmul(m23, m23.t()).sizes() == Shape{2, 2});
  check_values(m23.matmul(m23.t()), {14, 32, 32, 77});
  // N-D @ 2-D folds the batch into rows
  Tensor a = randn_seeded({2, 3, 4, 5}, 21), w = randn_seeded({5, 6}, 22);
  Tensor r = matmul(a, w);
  REQUIRE(r.sizes() == Shape{2, 3, 4, 6});
  check_values(r, naive_mm(a, w), 1e-12);
  // N-D @ 1-D, 1-D @ N-D
  Tensor v5 = randn_seeded({5}, 23);
  REQUIRE(matmul(a, v5).sizes() == Shape{2, 3, 4});
  check_values(matmul(a, v5), naive_mm(a, v5.view({5, 1})), 1e-12);
  Tensor b = randn_seeded({2, 4, 6}, 24), v4 = randn_seeded({4}, 25);
  REQUIRE(matmul(v4, b).sizes() == Shape{2, 6});
  check_values(matmul(v4, b), naive_mm(v4.view({1, 1, 4}).expand({2, 1, 4}).contiguous(), b), 1e-12);
  // 2-D @ N-D
  Tensor m = randn_seeded({3, 4}, 26);
  REQUIRE(matmul(m, b).sizes() == Shape{2, 3, 6});
  check_values(matmul(m, b), naive_mm(m.expand({2, 3, 4}).contiguous(), b), 1e-12);
  // batch dims broadcast: [2,1,3,4] @ [5,4,2] -> [2,5,3,2]
  Tensor x = randn_seeded({2, 1, 3, 4}, 27), y = randn_seeded({5, 4, 2}, 28);
  Tensor xy = matmul(x, y);
  REQUIRE(xy.sizes() == Shape{2, 5, 3, 2});
  check_values(xy, naive_mm(x.expand({2, 5, 3, 4}).contiguous(), y.expand({2, 5, 4, 2}).contiguous()), 1e-12);
  // a non-contiguous N-D lhs (reshape copies)
  Tensor at = randn_seeded({2, 5, 4}, 29).transpose(1, 2);
  check_values(matmul(at, w), naive_mm(at.contiguous(), w), 1e-12);
}

TEST_CASE("linear: x @ w^T + b for 1-D, 2-D, 3-D, strided inputs, with and without bias", "[linalg]") {
  Tensor w = tensor({1, 0, -1, 2, 1, 0}, {2, 3}), bias = tensor({10, 20}, {2});
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  check_values(linear(x, w), {-2, 4, -2, 13});
  check_values(linear(x, w, bias), {8, 24, 8, 33});
  Tensor x1 = tensor({1, 2, 3}, {3});
  REQUIRE(linear(x1, w, bias).sizes() == Shape{2});
  check_values(linear(x1, w, bias), {8, 24});
  Tensor x3 = randn_seeded({2, 4, 3}, 31, kFloat);
  Tensor y3 = linear(x3, w, bias);
  REQUIRE(y3.sizes() == Shape{2, 4, 2});
  check_close(y3, add(matmul(x3, w.t()), bias), 1e-5);
  Tensor x3t = randn_seeded({2, 3, 4}, 32, kFloat).transpose(1, 2);  // non-contiguous [2,4,3]
  check_close(linear(x3t, w, bias), add(matmul(x3t.contiguous(), w.t()), bias), 1e-5);
  check_close(linear(x3t, w), matmul(x3t.contiguous(), w.t()), 1e-5);
  // a transposed weight (as after a .t() of a [3,2] parameter)
  Tensor wt = tensor({1, 2, 0, 1, -1, 0}, {3, 2}).t();
  check_values(linear(x, wt, bias), {8, 24, 8, 33});
}

// ---------------------------------------------------------------------------------------------
// gradients
// ---------------------------------------------------------------------------------------------

// The calls PyTorch 2.15's matmul and linear issue, recorded under a TorchDispatchMode on CPU tensors
// that require grad (python/remat_plan's record_calls): the same calls here, so that a plan file
// names the same op calls on both sides (issue 41). Each entry: op, output shape.
TEST_CASE("matmul and linear issue PyTorch's op calls", "[linalg][dispatch]") {
  using Calls = std::vector<std::pair<std::string, Shape>>;
  auto calls_of = [](const std::function<void()>& f) {
    struct Recorder : DispatchMode {
      Calls calls;
      std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
        std::vector<IValue> out = op.call(args);
        calls.emplace_back(op.name(), out.at(0).isTensor() ? out[0].toTensor().sizes() : Shape{});
        return out;
      }
    };
    auto rec = std::make_shared<Recorder>();
    DispatchModeGuard g(rec);
    f();
    return rec->calls;
  };
  auto r = [](Shape s) { return leaf(s, 7); };
  // q @ k^T of attention: 4-D, transposed views; both copied to 3-D, as PyTorch does
  Tensor q = r({2, 4, 3, 5}).transpose(1, 2), k = r({2, 4, 3, 5}).transpose(1, 2);
  CHECK(calls_of([&] { matmul(q, k.transpose(-2, -1)); }) ==
        Calls{{"aten::transpose", {2, 3, 5, 4}}, {"aten::expand", {2, 3, 4, 5}}, {"aten::clone", {2, 3, 4, 5}},
              {"aten::_unsafe_view", {6, 4, 5}}, {"aten::expand", {2, 3, 5, 4}}, {"aten::clone", {2, 3, 5, 4}},
              {"aten::_unsafe_view", {6, 5, 4}}, {"aten::bmm", {6, 4, 4}}, {"aten::_unsafe_view", {2, 3, 4, 4}}});
  Tensor a4 = r({2, 3, 4, 5}), b4 = r({2, 3, 5, 6}), a3 = r({2, 3, 4}), b2 = r({4, 5});
  CHECK(calls_of([&] { matmul(a4, b4); }) ==
        Calls{{"aten::expand", {2, 3, 4, 5}}, {"aten::view", {6, 4, 5}}, {"aten::expand", {2, 3, 5, 6}},
              {"aten::view", {6, 5, 6}}, {"aten::bmm", {6, 4, 6}}, {"aten::_unsafe_view", {2, 3, 4, 6}}});
  CHECK(calls_of([&] { matmul(a3, b2); }) ==
        Calls{{"aten::view", {6, 4}}, {"aten::mm", {6, 5}}, {"aten::_unsafe_view", {2, 3, 5}}});
  Tensor x3 = r({2, 3, 4}), x2 = r({3, 4}), x1 = r({4}), w = r({5, 4}), b = r({5});
  CHECK(calls_of([&] { linear(x3, w, b); }) ==
        Calls{{"aten::view", {6, 4}}, {"aten::t", {4, 5}}, {"aten::addmm", {6, 5}}, {"aten::_unsafe_view", {2, 3, 5}}});
  CHECK(calls_of([&] { linear(x3, w, Tensor()); }) ==
        Calls{{"aten::t", {4, 5}}, {"aten::view", {6, 4}}, {"aten::mm", {6, 5}}, {"aten::_unsafe_view", {2, 3, 5}}});
  CHECK(calls_of([&] { linear(x2, w, b); }) == Calls{{"aten::t", {4, 5}}, {"aten::addmm", {3, 5}}});
  CHECK(calls_of([&] { linear(x2, w, Tensor()); }) == Calls{{"aten::t", {4, 5}}, {"aten::mm", {3, 5}}});
  CHECK(calls_of([&] { linear(x1, w, b); }) ==
        Calls{{"aten::view", {1, 4}}, {"aten::t", {4, 5}}, {"aten::addmm", {1, 5}}, {"aten::_unsafe_view", {5}}});
}

TEST_CASE("mm gradients: values", "[linalg][autograd]") {
  Tensor a = from_vector({1, 2, 3, 4}, {2, 2}, TensorOptions().dtype(kDouble).requires_grad(true));
  Tensor b = from_vector({5, 6, 7, 8}, {2, 2}, TensorOptions().dtype(kDouble).requires_grad(true));
  mm(a, b).sum().backward();
  // dL/da = 1 @ b^T: row sums of b; dL/db = a^T @ 1: column sums of a, repeated
  check_values(a.grad(), {11, 15, 11, 15});
  check_values(b.grad(), {4, 4, 6, 6});
}

TEST_CASE("gradcheck: mm, bmm, addmm on contiguous and strided operands", "[linalg][gradcheck]") {
  REQUIRE(gradcheck1([](auto& x) { return mm(x[0], x[1]); }, {leaf({3, 4}, 41), leaf({4, 2}, 42)}));
  REQUIRE(gradcheck1([](auto& x) { return mm(x[0], x[1]); }, {transposed_leaf({3, 4}, 43), stepped_leaf({4, 2}, 44)}));
  REQUIRE(gradcheck1([](auto& x) { return mm(x[0].expand({3, 4}), x[1]); }, {leaf({1, 4}, 45), transposed_leaf({4, 2}, 46)}));
  REQUIRE(gradcheck1([](auto& x) { return bmm(x[0], x[1]); }, {leaf({2, 3, 4}, 47), leaf({2, 4, 2}, 48)}));
  REQUIRE(gradcheck1([](auto& x) { return bmm(x[0], x[1]); }, {transposed_leaf({2, 3, 4}, 49), stepped_leaf({2, 4, 2}, 50)}));
  REQUIRE(gradcheck1([](auto& x) { return bmm(x[0].expand({2, 3, 4}), x[1]); }, {leaf({1, 3, 4}, 51), leaf({2, 4, 2}, 52)}));
  REQUIRE(gradcheck1([](auto& x) { return addmm(x[0], x[1], x[2]); }, {leaf({2}, 53), leaf({3, 4}, 54), leaf({4, 2}, 55)}));
  REQUIRE(gradcheck1([](auto& x) { return addmm(x[0], x[1], x[2]); }, {leaf({3, 1}, 56), transposed_leaf({3, 4}, 57), leaf({4, 2}, 58)}));
  REQUIRE(gradcheck1([](auto& x) { return addmm(x[0], x[1], x[2]); }, {leaf({3, 2}, 59), leaf({3, 4}, 60), stepped_leaf({4, 2}, 61)}));
}

TEST_CASE("gradcheck: matmul ranks and broadcast batch dims", "[linalg][gradcheck]") {
  Fn mmf = [](auto& x) { return matmul(x[0], x[1]); };
  REQUIRE(gradcheck1(mmf, {leaf({3}, 71), leaf({3}, 72)}));
  REQUIRE(gradcheck1(mmf, {leaf({2, 3}, 73), leaf({3}, 74)}));
  REQUIRE(gradcheck1(mmf, {leaf({3}, 75), leaf({3, 2}, 76)}));
  REQUIRE(gradcheck1(mmf, {transposed_leaf({2, 3}, 77), leaf({3, 2}, 78)}));
  REQUIRE(gradcheck1(mmf, {leaf({2, 2, 3}, 79), leaf({3, 2}, 80)}));          // N-D @ 2-D
  REQUIRE(gradcheck1(mmf, {transposed_leaf({2, 2, 3}, 81), leaf({3}, 82)}));  // N-D @ 1-D, copying reshape
  REQUIRE(gradcheck1(mmf, {leaf({3}, 83), leaf({2, 3, 2}, 84)}));             // 1-D @ N-D
  REQUIRE(gradcheck1(mmf, {leaf({2, 3}, 85), leaf({2, 3, 2}, 86)}));          // 2-D @ N-D
  REQUIRE(gradcheck1(mmf, {leaf({2, 1, 2, 3}, 87), leaf({3, 3, 2}, 88)}));    // broadcast batch dims
}

TEST_CASE("gradcheck: linear with and without bias, 1-D, 2-D and 3-D input", "[linalg][gradcheck]") {
  Tensor w = leaf({2, 3}, 91), b = leaf({2}, 92);
  Fn lin = [](auto& x) { return linear(x[0], x[1], x[2]); };
  Fn lin_nobias = [](auto& x) { return linear(x[0], x[1]); };
  REQUIRE(gradcheck1(lin, {leaf({4, 3}, 93), w, b}));
  REQUIRE(gradcheck1(lin_nobias, {leaf({4, 3}, 94), w}));
  REQUIRE(gradcheck1(lin, {leaf({2, 2, 3}, 95), w, b}));
  REQUIRE(gradcheck1(lin_nobias, {leaf({2, 2, 3}, 96), w}));
  REQUIRE(gradcheck1(lin, {transposed_leaf({2, 2, 3}, 97), w, b}));
  REQUIRE(gradcheck1(lin, {leaf({3}, 98), transposed_leaf({2, 3}, 99), b}));
}

TEST_CASE("gradgradcheck: mm", "[linalg][gradcheck]") {
  REQUIRE(gradgradcheck1([](auto& x) { return mm(x[0], x[1]); }, {leaf({3, 2}, 101), transposed_leaf({2, 4}, 102)}));
  REQUIRE(gradgradcheck1([](auto& x) { return bmm(x[0], x[1]); }, {leaf({2, 2, 3}, 103), leaf({2, 3, 2}, 104)}));
  REQUIRE(gradgradcheck1([](auto& x) { return linear(x[0], x[1], x[2]); }, {leaf({2, 3}, 105), leaf({2, 3}, 106), leaf({2}, 107)}));
}

// ---------------------------------------------------------------------------------------------
// bf16, Meta, errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("bf16: matrix products are within bf16 tolerance of float32, stored in bf16", "[linalg][bf16]") {
  Tensor a = randn_seeded({8, 16}, 111, kFloat), b = randn_seeded({16, 5}, 112, kFloat);
  Tensor bias = randn_seeded({5}, 113, kFloat);
  check_bf16_matches_f32([](auto& x) { return mm(x[0], x[1]); }, {a, b}, 1e-2, 3e-2);
  check_bf16_matches_f32([](auto& x) { return mm(x[1].t(), x[0].t()); }, {a, b}, 1e-2, 3e-2);
  check_bf16_matches_f32([](auto& x) { return addmm(x[2], x[0], x[1]); }, {a, b, bias}, 1e-2, 3e-2);
  check_bf16_matches_f32([](auto& x) { return matmul(x[0], x[1]); }, {a, b}, 1e-2, 3e-2);
  check_bf16_matches_f32([](auto& x) { return linear(x[0], x[1].t(), x[2]); }, {a, b, bias}, 1e-2, 3e-2);
  Tensor ba = randn_seeded({3, 4, 16}, 114, kFloat), bb = randn_seeded({3, 16, 6}, 115, kFloat);
  check_bf16_matches_f32([](auto& x) { return bmm(x[0], x[1]); }, {ba, bb}, 1e-2, 3e-2);
  check_bf16_matches_f32([](auto& x) { return matmul(x[0], x[1]); }, {ba, b}, 1e-2, 3e-2);
}

TEST_CASE("Meta: matrix products infer shapes and dtypes and allocate nothing", "[linalg][meta]") {
  int64_t before = memory_allocated(Device{kCPU});
  CHECK(mm(meta({3, 4}), meta({4, 5})).sizes() == Shape{3, 5});
  CHECK(mm(meta({3, 4}, kBFloat16), meta({4, 5}, kBFloat16)).dtype() == kBFloat16);
  CHECK(bmm(meta({2, 3, 4}), meta({2, 4, 5})).sizes() == Shape{2, 3, 5});
  CHECK(addmm(meta({5}), meta({3, 4}), meta({4, 5})).sizes() == Shape{3, 5});
  CHECK(matmul(meta({4}), meta({4})).sizes() == Shape{});
  CHECK(matmul(meta({2, 1, 3, 4}), meta({5, 4, 2})).sizes() == Shape{2, 5, 3, 2});
  CHECK(matmul(meta({2, 3, 4}), meta({4})).sizes() == Shape{2, 3});
  CHECK(matmul(meta({2, 3, 4}), meta({4, 7})).sizes() == Shape{2, 3, 7});
  CHECK(linear(meta({2, 3, 4}), meta({6, 4}), meta({6})).sizes() == Shape{2, 3, 6});
  CHECK(linear(meta({4}), meta({6, 4})).sizes() == Shape{6});
  Tensor w = meta({6, 4}).requires_grad_();
  linear(meta({2, 3, 4}), w).sum().backward();
  CHECK(w.grad().is_meta());
  CHECK(w.grad().sizes() == Shape{6, 4});
  CHECK(memory_allocated(Device{kCPU}) == before);
}

TEST_CASE("linalg error paths", "[linalg][errors]") {
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}), zeros({4, 5})),
                      Contains("aten::mm") && Contains("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"));
  REQUIRE_THROWS_WITH(mm(meta({2, 3}), meta({4, 5})), Contains("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"));
  REQUIRE_THROWS_WITH(mm(zeros({2, 3, 4}), zeros({4, 5})),
                      Contains("aten::mm") && Contains("2-D") && Contains("[2, 3, 4]"));
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}), zeros({3}, kDouble)), Contains("aten::mm") && Contains("2-D"));
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}), zeros({3, 2}, kDouble)),
                      Contains("aten::mm") && Contains("same dtype") && Contains("Float") && Contains("Double"));
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}, kLong), zeros({3, 2}, kLong)), Contains("aten::mm") && Contains("Long"));
  REQUIRE_THROWS_WITH(mm(meta({2, 3}, kLong), meta({3, 2}, kLong)), Contains("aten::mm") && Contains("Long"));
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}), meta({3, 2})),
                      Contains("aten::mm") && Contains("Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})),
                      Contains("aten::bmm") && Contains("same number of batches") && Contains("2 and 3"));
  REQUIRE_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({2, 5, 5})), Contains("aten::bmm") && Contains("[2, 4]") && Contains("[2, 5]"));
  REQUIRE_THROWS_WITH(bmm(zeros({3, 4}), zeros({2, 4, 5})), Contains("aten::bmm") && Contains("3-D"));
  REQUIRE_THROWS_WITH(bmm(meta({2, 3, 4}, kLong), meta({2, 4, 5}, kLong)), Contains("aten::bmm") && Contains("Long"));
  REQUIRE_THROWS_WITH(addmm(zeros({3}), zeros({2, 3}), zeros({3, 2})),
                      Contains("aten::addmm") && Contains("[3]") && Contains("[2, 2]"));
  REQUIRE_THROWS_WITH(addmm(meta({2}), zeros({2, 3}), zeros({3, 2})),
                      Contains("Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(matmul(scalar_tensor(1.0), zeros({2})), Contains("aten::matmul") && Contains("at least 1D"));
  REQUIRE_THROWS_WITH(matmul(zeros({3}), zeros({4})), Contains("aten::matmul") && Contains("[3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(matmul(zeros({2, 3}), zeros({4})), Contains("aten::mm") && Contains("2x3 and 4x1"));
  REQUIRE_THROWS_WITH(matmul(zeros({2, 2, 3}), zeros({3, 3, 2})),
                      Contains("aten::matmul") && Contains("The size of tensor a (2) must match the size of tensor b (3)"));
  REQUIRE_THROWS_WITH(matmul(zeros({2, 2, 3}), zeros({2, 4, 2})),
                      Contains("aten::matmul") && Contains("cannot be multiplied (2x3 and 4x2)"));
  REQUIRE_THROWS_WITH(linear(zeros({2, 3}), zeros({3})), Contains("aten::linear") && Contains("'weight'") && Contains("2-D"));
  REQUIRE_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 5})), Contains("cannot be multiplied (2x3 and 5x4)"));
  REQUIRE_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 3}), zeros({3})), Contains("aten::addmm") && Contains("[3]"));
}

// ---- cases from the engine test suite (gradcheck of the first op set) ----
namespace engine_suite {
namespace {
// out[i][j] = sum_k a[i][k] * b[k][j], from the logical values.
std::vector<double> naive_mm(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector(), y = b.to_vector(), out;
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += x[i * k + p] * y[p * n + j];
      out.push_back(s);
    }
  return out;
}
}  // namespace

TEST_CASE("mm with expanded (stride 0) operands", "[linalg]") {
  // What mm's backward gets after sum(): the incoming gradient is expanded from a scalar.
  Tensor g = full({}, 2.0, kDouble).unsqueeze(0).unsqueeze(1).expand({2, 2});
  REQUIRE(g.strides() == Shape{0, 0});
  Tensor w = from_vector({1, -1, 2, 0, 0.5, 3}, {3, 2}, kDouble);
  Tensor m = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, kDouble);
  REQUIRE(mm(g, w.t()).to_vector() == naive_mm(g, w.t()));
  REQUIRE(mm(m.t(), g).to_vector() == naive_mm(m.t(), g));
  Tensor row = from_vector({1, 2, 3}, {3}, kDouble).unsqueeze(0).expand({4, 3});  // rows share memory
  REQUIRE(mm(row, w).to_vector() == naive_mm(row, w));
}

TEST_CASE("mm with size-1 dims of any stride, transposed and sliced operands", "[linalg]") {
  Tensor base = from_vector({3, 5}, {2}, kDouble);
  Tensor col = make_alias(base, {2, 1}, {1, 0}, 0);  // a column whose unused stride is 0
  Tensor ones_row = ones({1, 3}, kDouble);
  REQUIRE(mm(col, ones_row).to_vector() == std::vector<double>{3, 3, 3, 5, 5, 5});
  REQUIRE(mm(ones({3, 2}, kDouble), col).to_vector() == std::vector<double>{8, 8, 8});
  Tensor big = from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}, kDouble);
  Tensor sliced = big.slice(1, 0, 4, 2);  // [3, 2], strides [4, 2]: needs a copy
  Tensor rhs = from_vector({1, 2, 3, 4}, {2, 2}, kDouble);
  REQUIRE(mm(sliced, rhs).to_vector() == naive_mm(sliced, rhs));
  Tensor v = from_vector({1, 0, -1}, {3, 1}, kDouble);
  REQUIRE(mm(big.t(), v).to_vector() == naive_mm(big.t(), v));
}

TEST_CASE("mm with an expanded operand in every floating dtype", "[linalg]") {
  Tensor w = from_vector({1, -1, 2, 0, 0.5, 3}, {3, 2}, kDouble);
  Tensor g = full({}, 2.0, kDouble).unsqueeze(0).unsqueeze(1).expand({2, 2});
  const std::vector<double> expected = naive_mm(g, w.t());  // small multiples of 0.5: exact in every dtype
  for (ScalarType t : {kFloat, kBFloat16, kHalf}) {
    INFO(toString(t));
    Tensor gt = full({}, 2.0, t).unsqueeze(0).unsqueeze(1).expand({2, 2});
    REQUIRE(mm(gt, w.to(t).t()).to_vector() == expected);
  }
}
}  // namespace engine_suite

TEST_CASE("bmm with several batch dims: strided 4-D views (attention's q, k^T, v) without copies", "[linalg]") {
  // q, k, v: [B, H, T, D] views of one [B, T, 3C] buffer, as CausalSelfAttention makes them.
  const int64_t B = 2, H = 3, T = 4, D = 5, C = H * D;
  Tensor qkv = randn_seeded({B, T, 3 * C}, 61);
  auto head_view = [&](int64_t i) { return qkv.slice(2, i * C, (i + 1) * C).view({B, T, H, D}).transpose(1, 2); };
  Tensor q = head_view(0), k = head_view(1), v = head_view(2);
  Tensor s = bmm(q, k.transpose(-2, -1));
  REQUIRE(s.sizes() == Shape{B, H, T, T});
  check_values(s, naive_mm(q.contiguous(), k.transpose(-2, -1).contiguous()), 1e-5);
  check_values(matmul(s, v), naive_mm(s, v.contiguous()), 1e-5);
  CHECK(equal(matmul(q, k.transpose(-2, -1)), s));  // matmul hands the views to one bmm
  for (const Tensor& t : {q, k, v}) CHECK_FALSE(t.is_contiguous());
  // No copy of the operands: the only tensor allocated is the product.
  const int64_t before = memory_allocated();
  Tensor r = bmm(q, k.transpose(-2, -1));
  CHECK(memory_allocated() - before == r.numel() * static_cast<int64_t>(sizeof(double)));
  CHECK(bmm(meta({2, 3, 4, 5}), meta({2, 3, 5, 6})).sizes() == Shape{2, 3, 4, 6});
  REQUIRE(gradcheck1([](auto& x) { return bmm(x[0], x[1]); }, {leaf({2, 2, 3, 4}, 62), leaf({2, 2, 4, 2}, 63)}));
  REQUIRE_THROWS_WITH(bmm(zeros({2, 3, 4, 5}), zeros({2, 4, 5, 6})),
                      Contains("aten::bmm") && Contains("same batch dims") && Contains("[2, 3]") && Contains("[2, 4]"));
  REQUIRE_THROWS_WITH(bmm(zeros({1, 1, 1, 1, 1, 2, 3}), zeros({1, 1, 1, 1, 1, 3, 2})),
                      Contains("aten::bmm") && Contains("up to 6-D") && Contains("7-D"));
}
