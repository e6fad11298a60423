// Tests ops/cuda/linalg.cpp: mm, bmm, addmm (and the matmul/linear composites over them) on CUDA
// through cuBLAS against the CPU, forward and backward, with sizes of 1, about 32 and about
// 1024, transposed, strided, misaligned, broadcast and empty operands, in every floating dtype;
// TF32 off by default.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/blas.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

namespace {
Tolerance matmul_tolerance(ScalarType t) { return t == kDouble ? Tolerance{1e-10, 1e-10} : reduction_tolerance(t); }
}  // namespace

TEST_CASE("mm on CUDA matches the CPU for every operand layout and dtype", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  REQUIRE_FALSE(kernels::cuda::allow_tf32());
  uint64_t seed = 1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{64, 48, 80}, {1, 33, 17}, {37, 1, 5}, {129, 257, 65}}) {
      Tensor a = random_cpu({m, k}, dt, ++seed), b = random_cpu({k, n}, dt, ++seed);
      Tensor at = random_cpu({k, m}, dt, ++seed).t(), bt = random_cpu({n, k}, dt, ++seed).t();
      for (const auto& [x, y] : {std::pair<Tensor, Tensor>{a, b}, {at, b}, {a, bt}, {at, bt}}) {
        INFO(toString(dt) << " " << m << "x" << k << "x" << n << " strides " << str(x.strides()) << " " << str(y.strides()));
        Tensor expected = mm(x.to(kDouble), y.to(kDouble)).to(dt);
        CHECK(compare(mm(x.to(cuda0()), y.to(cuda0())), expected, matmul_tolerance(dt)) == "");
      }
    }
  }
  // An operand cuBLAS cannot read directly (both strides > 1) is copied first.
  Tensor big = random_cpu({20, 30}, kFloat, 99);
  Tensor odd = big.slice(0, 0, 20, 2).slice(1, 0, 30, 3);  // [10, 10], strides (60, 3)
  Tensor w = random_cpu({10, 4}, kFloat, 98);
  CHECK(compare(mm(big.to(cuda0()).slice(0, 0, 20, 2).slice(1, 0, 30, 3), w.to(cuda0())), mm(odd, w),
                kF32Reduction) == "");
}

TEST_CASE("bmm, addmm, matmul and linear on CUDA match the CPU", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    Tensor a = random_cpu({6, 17, 9}, dt, 11), b = random_cpu({6, 9, 13}, dt, 12);
    CHECK(compare(bmm(a.to(cuda0()), b.to(cuda0())), bmm(a.to(kDouble), b.to(kDouble)).to(dt), matmul_tolerance(dt)) ==
          "");
    Tensor bt = b.transpose(1, 2).contiguous().transpose(1, 2);
    CHECK(compare(bmm(a.to(cuda0()), bt.to(cuda0())), bmm(a.to(kDouble), b.to(kDouble)).to(dt),
                  matmul_tolerance(dt)) == "");
    Tensor bias = random_cpu({13}, dt, 13), x = random_cpu({17, 9}, dt, 14), w = random_cpu({9, 13}, dt, 15);
    CHECK(compare(addmm(bias.to(cuda0()), x.to(cuda0()), w.to(cuda0())),
                  addmm(bias.to(kDouble), x.to(kDouble), w.to(kDouble)).to(dt), matmul_tolerance(dt)) == "");
    // Broadcast batch (a stride-0 batch operand through matmul's expand).
    Tensor lhs = random_cpu({4, 5, 8}, dt, 16), rhs = random_cpu({8, 3}, dt, 17), rb = random_cpu({1, 8, 3}, dt, 18);
    CHECK(compare(matmul(lhs.to(cuda0()), rhs.to(cuda0())), matmul(lhs.to(kDouble), rhs.to(kDouble)).to(dt),
                  matmul_tolerance(dt)) == "");
    CHECK(compare(matmul(lhs.to(cuda0()), rb.to(cuda0())), matmul(lhs.to(kDouble), rb.to(kDouble)).to(dt),
                  matmul_tolerance(dt)) == "");
    Tensor lw = random_cpu({7, 8}, dt, 19), lb = random_cpu({7}, dt, 20);
    CHECK(compare(linear(lhs.to(cuda0()), lw.to(cuda0()), lb.to(cuda0())),
                  linear(lhs.to(kDouble), lw.to(kDouble), lb.to(kDouble)).to(dt), matmul_tolerance(dt)) == "");
  }
}

TEST_CASE("an empty inner dimension gives zeros (mm) and the bias (addmm)", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  auto opt = TensorOptions().device(cuda0());
  Tensor a = empty({3, 0}, opt), b = empty({0, 4}, opt);
  CHECK(equal(mm(a, b).to(Device(kCPU)), zeros({3, 4})));
  CHECK(equal(addmm(ones({4}, opt), a, b).to(Device(kCPU)), ones({3, 4})));
}

TEST_CASE("TF32 can be allowed for float GEMMs", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor a = random_cpu({256, 256}, kFloat, 21), b = random_cpu({256, 256}, kFloat, 22);
  Tensor expected = mm(a.to(kDouble), b.to(kDouble)).to(kFloat);
  kernels::cuda::set_allow_tf32(true);
  Tensor fast = mm(a.to(cuda0()), b.to(cuda0()));
  kernels::cuda::set_allow_tf32(false);
  // TF32 keeps 10 mantissa bits of each operand (rounded to nearest) and accumulates in float:
  // the float reduction tolerance holds against the exact product of the rounded operands. (Against
  // the product of the float operands it does not: over k = 256 the rounding errors add up to
  // about 2e-2 in the worst of 65536 elements.)
  auto to_tf32 = [](Tensor t) {
    t = t.contiguous().clone();
    float* p = t.data_ptr<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint32_t u;
      std::memcpy(&u, &p[i], 4);
      u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
      std::memcpy(&p[i], &u, 4);
    }
    return t;
  };
  Tensor expected_tf32 = mm(to_tf32(a).to(kDouble), to_tf32(b).to(kDouble)).to(kFloat);
  CHECK(compare(fast, expected_tf32, kF32Reduction) == "");
  CHECK(compare(fast, expected, kF32Reduction) != "");  // TF32 was really used
  CHECK(compare(mm(a.to(cuda0()), b.to(cuda0())), expected, kF32Reduction) == "");
}

TEST_CASE("matrix product errors on CUDA are the CPU's", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  auto opt = TensorOptions().device(cuda0());
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}, opt), zeros({4, 5}, opt)),
                      Catch::Contains("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"));
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}, opt), zeros({3, 5})), Catch::Contains("Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(bmm(zeros({2, 2, 3}, opt), zeros({3, 3, 5}, opt)),
                      Catch::Contains("batch1 and batch2 must have same number of batches"));
  REQUIRE_THROWS_WITH(mm(zeros({2, 3}, TensorOptions().dtype(kLong).device(cuda0())),
                         zeros({3, 2}, TensorOptions().dtype(kLong).device(cuda0()))),
                      Catch::Contains("floating point"));
}

TEST_CASE("gradcheck in float64 on CUDA for mm, bmm, addmm", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor a = random_cpu({3, 4}, kDouble, 31).to(cuda0()).requires_grad_();
  Tensor b = random_cpu({4, 2}, kDouble, 32).to(cuda0()).requires_grad_();
  Tensor bias = random_cpu({2}, kDouble, 33).to(cuda0()).requires_grad_();
  CHECK(autograd::gradcheck([](const std::vector<Tensor>& in) { return std::vector<Tensor>{mm(in[0], in[1])}; },
                            {a, b}));
  CHECK(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{addmm(in[2], in[0], in[1])}; }, {a, b, bias}));
  Tensor p = random_cpu({2, 3, 4}, kDouble, 34).to(cuda0()).requires_grad_();
  Tensor q = random_cpu({2, 4, 2}, kDouble, 35).to(cuda0()).requires_grad_();
  CHECK(autograd::gradcheck([](const std::vector<Tensor>& in) { return std::vector<Tensor>{bmm(in[0], in[1])}; },
                            {p, q}));
}

namespace {
// (m, k, n) of the products: sizes of 1, about a warp, about 1024, and empty ones.
const std::vector<std::tuple<int64_t, int64_t, int64_t>> kProducts = {
    {1, 1, 1}, {31, 33, 1}, {1, 33, 31}, {33, 31, 33}, {3, 1025, 5}, {1023, 3, 2}, {2, 4, 1025},
    {0, 5, 3}, {4, 0, 3}, {3, 5, 0}};
std::string mkn(int64_t m, int64_t k, int64_t n) {
  return std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
}
}  // namespace

TEST_CASE("mm and addmm on CUDA match the CPU, forward and backward, for every operand layout", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  REQUIRE_FALSE(kernels::cuda::allow_tf32());
  const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Offset,
                                       Layout::Expanded};
  uint64_t seed = 0;
  for (ScalarType dt : floating_types()) {
    for (const auto& [m, k, n] : kProducts) {
      for (Layout la : layouts) {
        for (Layout lb : layouts) {
          const Arg a = arg({m, k}), b = arg({k, n});
          if (!layout_applies(la, a.shape) || !layout_applies(lb, b.shape)) continue;
          INFO(toString(dt) << " " << mkn(m, k, n) << " " << layout_name(la) << " x " << layout_name(lb));
          CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return mm(in[0], in[1]); }, {a.in(la), b.in(lb)}, dt,
                            options(Kind::Reduction, dt, Kind::Reduction, true, ++seed)) == "");
          // addmm: a row bias (broadcast) and a full one
          CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return addmm(in[2], in[0], in[1]); },
                            {a.in(la), b.in(lb), arg({n})}, dt,
                            options(Kind::Reduction, dt, Kind::Reduction, true, ++seed)) == "");
          CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return addmm(in[2], in[0], in[1]); },
                            {a.in(la), b.in(lb), arg({m, n})}, dt,
                            options(Kind::Reduction, dt, Kind::Reduction, true, ++seed)) == "");
        }
      }
    }
  }
}

TEST_CASE("bmm, matmul and linear on CUDA match the CPU, forward and backward", "[linalg][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 0;
  for (ScalarType dt : floating_types()) {
    for (const auto& [m, k, n] : kProducts) {
      for (int64_t batch : {int64_t{1}, int64_t{3}}) {
        INFO(toString(dt) << " batch " << batch << " " << mkn(m, k, n));
        const CheckOptions opt = options(Kind::Reduction, dt, Kind::Reduction, true, ++seed);
        for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Expanded}) {
          INFO("layout " << layout_name(l));
          const Arg a = arg({batch, m, k}), b = arg({batch, k, n});
          if (layout_applies(l, a.shape)) {
            CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, {a.in(l), b}, dt,
                              opt) == "");
          }
          if (layout_applies(l, b.shape)) {
            CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, {a, b.in(l)}, dt,
                              opt) == "");
          }
        }
        // matmul broadcasts a matrix over the batch; linear is x W^T + b over leading dims.
        CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                          {arg({batch, m, k}), arg({k, n})}, dt, opt) == "");
        CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                          {arg({m, k}), arg({batch, k, n})}, dt, opt) == "");
        CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {arg({k}), arg({k, n})},
                          dt, opt) == "");
        CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                          {arg({batch, m, k}), arg({n, k}), arg({n})}, dt, opt) == "");
        CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); },
                          {arg({batch, m, k}).in(Layout::Transposed), arg({n, k}).in(Layout::Transposed)}, dt,
                          opt) == "");
      }
    }
  }
}
