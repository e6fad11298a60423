// Tests ops/cuda/attention.cpp (and kernels/cuda/attention.cu, ops/efficient_attention.cpp): the
// fused aten::_scaled_dot_product_efficient_attention and its backward on CUDA against the math
// path on the CPU (output and the three gradients), causal and not, L != S, strided inputs, in
// Float and Double; its outputs' layouts; bitwise-equal reruns; every error; and a Meta dry run
// imitating CUDA allocating what the CUDA run does, event by event.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/op_counter.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {

constexpr const char* kOp = "aten::_scaled_dot_product_efficient_attention";
constexpr const char* kBackwardOp = "aten::_scaled_dot_product_efficient_attention_backward";

// How an input [B, H, rows, E] is laid out.
enum class Layout { kContiguous, kHeadsInterleaved, kStridedHeadDim };

// A leaf holding the data, and the [B, H, rows, E] view of it passed to attention.
struct Input {
  Tensor leaf, view;
};
Input make_input(const Tensor& values, Layout layout, Device device) {
  const Tensor cpu_values = values.detach();  // the leaf is a new tensor on every device (to(kCPU) is a no-op)
  const Shape& s = cpu_values.sizes();  // [B, H, rows, E]
  Input in;
  if (layout == Layout::kContiguous) {
    in.leaf = cpu_values.to(device).requires_grad_(true);
    in.view = in.leaf;
  } else if (layout == Layout::kHeadsInterleaved) {  // [B, rows, H, E] memory, as a GPT block's q, k, v
    in.leaf = transpose(cpu_values, 1, 2).contiguous().to(device).requires_grad_(true);
    in.view = transpose(in.leaf, 1, 2);
  } else {  // every other element of a [B, H, rows, 2E] tensor: head-dim stride 2
    Tensor wide = zeros({s[0], s[1], s[2], 2 * s[3]}, TensorOptions().dtype(cpu_values.dtype()));
    slice(wide, 3, 0, 2 * s[3], 2).copy_(cpu_values);
    in.leaf = wide.to(device).requires_grad_(true);
    in.view = slice(in.leaf, 3, 0, 2 * s[3], 2);
  }
  return in;
}

struct Result {
  Tensor out, dq, dk, dv;  // on the CPU; the gradients of the leaves
};

// sum(attention(q, k, v) * w).backward(), with backend on device.
Result run(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, bool causal, Layout layout,
           Device device, SDPBackend backend) {
  Input qi = make_input(q, layout, device), ki = make_input(k, layout, device), vi = make_input(v, layout, device);
  sdpa_kernel guard(backend);
  Tensor out = scaled_dot_product_attention(qi.view, ki.view, vi.view, causal);
  sum(mul(out, w.to(device))).backward();
  return {out.to(Device{kCPU}), qi.leaf.grad().to(Device{kCPU}), ki.leaf.grad().to(Device{kCPU}),
          vi.leaf.grad().to(Device{kCPU})};
}

void check_close(const Tensor& actual, const Tensor& expected, Tolerance tol, const char* what) {
  const std::string diff = compare(actual, expected, tol);
  INFO(what << ": " << diff);
  CHECK(diff.empty());
}

// The log-sum-exp of each row of scale * q k^T (causal: keys j <= i), in double on the CPU.
std::vector<double> logsumexp_ref(const Tensor& q, const Tensor& k, bool causal) {
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), S = k.size(2), E = q.size(3);
  const std::vector<double> qv = q.contiguous().to_vector(), kv = k.contiguous().to_vector();
  const double scale = 1.0 / std::sqrt(static_cast<double>(E));
  std::vector<double> out;
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s;
      for (int64_t j = 0; j < (causal ? std::min(S, i + 1) : S); ++j) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += qv[(bh * L + i) * E + e] * kv[(bh * S + j) * E + e];
        s.push_back(d * scale);
      }
      double m = -INFINITY, sum = 0;
      for (double x : s) m = std::max(m, x);
      for (double x : s) sum += std::exp(x - m);
      out.push_back(m + std::log(sum));
    }
  return out;
}

Tensor cuda_randn(const Shape& shape, uint64_t seed, ScalarType dtype = kFloat) {
  return random_cpu(shape, dtype, seed).to(cuda0());
}

}  // namespace

TEST_CASE("fused attention on CUDA: output and gradients match the CPU math path", "[attention][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  struct Case {
    int64_t B, H, L, S, E;
  };
  // L == S; L < S and L > S (causal stays top-left aligned); E over one 32-lane chunk, not a multiple of 32;
  // a long row of keys (the online softmax rescales many times).
  const std::vector<Case> cases = {{2, 3, 7, 7, 8}, {1, 2, 5, 9, 16}, {2, 1, 9, 4, 40}, {1, 2, 70, 130, 64}};
  for (ScalarType dtype : {kFloat, kDouble}) {
    for (const Case& c : cases) {
      for (bool causal : {false, true}) {
        for (Layout layout : {Layout::kContiguous, Layout::kHeadsInterleaved, Layout::kStridedHeadDim}) {
          INFO(toString(dtype) << " B=" << c.B << " H=" << c.H << " L=" << c.L << " S=" << c.S << " E=" << c.E
                               << " causal=" << causal << " layout=" << static_cast<int>(layout));
          const Tensor q = random_cpu({c.B, c.H, c.L, c.E}, dtype, 11);
          const Tensor k = random_cpu({c.B, c.H, c.S, c.E}, dtype, 12);
          const Tensor v = random_cpu({c.B, c.H, c.S, c.E}, dtype, 13);
          const Tensor w = random_cpu({c.B, c.H, c.L, c.E}, dtype, 14);
          const Result expected = run(q, k, v, w, causal, layout, Device{kCPU}, SDPBackend::MATH);
          CountOps ops;
          const Result actual = run(q, k, v, w, causal, layout, cuda0(), SDPBackend::FLASH_ATTENTION);
          CHECK(ops.counter->count(kOp) == 1);
          CHECK(ops.counter->count(kBackwardOp) == 1);
          CHECK(ops.counter->count("aten::_softmax") == 0);
          const Tolerance tol = reduction_tolerance(dtype);
          check_close(actual.out, expected.out, tol, "output");
          check_close(actual.dq, expected.dq, tol, "grad query");
          check_close(actual.dk, expected.dk, tol, "grad key");
          check_close(actual.dv, expected.dv, tol, "grad value");
        }
      }
    }
  }
}

TEST_CASE("fused attention on CUDA: PyTorch's layouts, the padded logsumexp, the philox tensors",
          "[attention][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const int64_t B = 2, H = 3, L = 37, S = 5, E = 8;  // logsumexp rows padded to 64
  for (ScalarType dtype : {kFloat, kDouble}) {
    for (bool causal : {false, true}) {
      INFO(toString(dtype) << " causal=" << causal);
      const Tensor q = random_cpu({B, H, L, E}, dtype, 21), k = random_cpu({B, H, S, E}, dtype, 22);
      const Tensor v = random_cpu({B, H, S, E}, dtype, 23);
      auto [out, lse, seed, offset] =
          _scaled_dot_product_efficient_attention(q.to(cuda0()), k.to(cuda0()), v.to(cuda0()), Tensor(), true, 0.0,
                                                  causal);
      CHECK(out.sizes() == Shape{B, H, L, E});
      CHECK(out.strides() == Shape{L * H * E, E, H * E, 1});  // [B, L, H, E] in memory
      CHECK(out.device() == cuda0());
      REQUIRE(lse.sizes() == Shape{B, H, 64});
      CHECK(lse.dtype() == dtype);
      CHECK(lse.is_contiguous());
      const std::vector<double> got = lse.to_vector(), want = logsumexp_ref(q, k, causal);
      std::vector<double> valid, padding;
      for (int64_t bh = 0; bh < B * H; ++bh)
        for (int64_t i = 0; i < 64; ++i) (i < L ? valid : padding).push_back(got[static_cast<size_t>(bh * 64 + i)]);
      CHECK(compare(valid, want, reduction_tolerance(dtype)).empty());
      for (double p : padding) CHECK(p == std::numeric_limits<double>::infinity());
      for (const Tensor& t : {seed, offset}) {
        CHECK(t.dim() == 0);
        CHECK(t.dtype() == kLong);
        CHECK(t.device() == Device{kCPU});
        CHECK(t.item() == 0);
      }
      // Without compute_log_sumexp: [B, H, 0], and the same output.
      auto [out2, lse2, seed2, offset2] =
          _scaled_dot_product_efficient_attention(q.to(cuda0()), k.to(cuda0()), v.to(cuda0()), Tensor(), false, 0.0,
                                                  causal);
      CHECK(lse2.sizes() == Shape{B, H, 0});
      CHECK(equal(out2, out));
      // An explicit scale is the softmax's.
      auto scaled = _scaled_dot_product_efficient_attention(q.to(cuda0()), k.to(cuda0()), v.to(cuda0()), Tensor(),
                                                            false, 0.0, causal, 0.5);
      Tensor ref = softmax(mul(matmul(q, transpose(k, 2, 3)), 0.5), -1);
      if (causal) ref = softmax(masked_fill(mul(matmul(q, transpose(k, 2, 3)), 0.5),
                                            triu(ones({L, S}, TensorOptions().dtype(kBool)), 1), -INFINITY),
                                -1);
      CHECK(compare(std::get<0>(scaled).to(Device{kCPU}), matmul(ref, v), reduction_tolerance(dtype)).empty());
    }
  }
}

TEST_CASE("fused attention on CUDA: no keys gives zero rows, no queries zero key gradients", "[attention][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Tensor q = cuda_randn({1, 2, 3, 4}, 35), none = cuda_randn({1, 2, 0, 4}, 36);
  auto [out, lse, seed, offset] = _scaled_dot_product_efficient_attention(q, none, none, Tensor(), true);
  CHECK(equal(out.to(Device{kCPU}), zeros({1, 2, 3, 4})));
  const std::vector<double> l = lse.to_vector();
  REQUIRE(l.size() == 64);
  for (size_t i = 0; i < l.size(); ++i) CHECK(l[i] == (i % 32 < 3 ? -INFINITY : INFINITY));
  auto g = _scaled_dot_product_efficient_attention_backward(q, q, none, none, Tensor(), out, lse, seed, offset, 0.0);
  CHECK(equal(std::get<0>(g).to(Device{kCPU}), zeros({1, 2, 3, 4})));
  CHECK(std::get<1>(g).sizes() == Shape{1, 2, 0, 4});
  // No queries: an empty output and logsumexp, and zero gradients for the keys and values.
  const Tensor k = cuda_randn({1, 2, 5, 4}, 37);
  auto f = _scaled_dot_product_efficient_attention(none, k, k, Tensor(), true);
  CHECK(std::get<0>(f).sizes() == Shape{1, 2, 0, 4});
  CHECK(std::get<1>(f).sizes() == Shape{1, 2, 0});
  auto gk = _scaled_dot_product_efficient_attention_backward(none, none, k, k, Tensor(), std::get<0>(f),
                                                             std::get<1>(f), seed, offset, 0.0);
  CHECK(equal(std::get<1>(gk).to(Device{kCPU}), zeros({1, 2, 5, 4})));
  CHECK(equal(std::get<2>(gk).to(Device{kCPU}), zeros({1, 2, 5, 4})));
}

TEST_CASE("fused attention on CUDA: reruns are bitwise equal (no atomics)", "[attention][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Tensor q = random_cpu({2, 2, 33, 24}, kFloat, 31), k = random_cpu({2, 2, 33, 24}, kFloat, 32);
  const Tensor v = random_cpu({2, 2, 33, 24}, kFloat, 33), w = random_cpu({2, 2, 33, 24}, kFloat, 34);
  for (bool causal : {false, true}) {
    INFO("causal=" << causal);
    const Result a = run(q, k, v, w, causal, Layout::kHeadsInterleaved, cuda0(), SDPBackend::FLASH_ATTENTION);
    const Result b = run(q, k, v, w, causal, Layout::kHeadsInterleaved, cuda0(), SDPBackend::FLASH_ATTENTION);
    CHECK(equal(a.out, b.out));
    CHECK(equal(a.dq, b.dq));
    CHECK(equal(a.dk, b.dk));
    CHECK(equal(a.dv, b.dv));
  }
}

TEST_CASE("fused attention on CUDA: unsupported arguments say which op and which values", "[attention][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Tensor q = cuda_randn({1, 2, 3, 4}, 41), k = cuda_randn({1, 2, 5, 4}, 42), v = cuda_randn({1, 2, 5, 4}, 43);
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q, k, v, cuda_randn({1, 2, 3, 5}, 44), true),
                      Contains(std::string(kOp) + ": an attn_bias (got shape [1, 2, 3, 5]) is not supported"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q, k, v, Tensor(), true, 0.25),
                      Contains(std::string(kOp) + ": dropout_p = 0.25 is not supported by remat's fused CUDA attention"));
  for (ScalarType t : {kBFloat16, kHalf}) {
    REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q.to(t), k.to(t), v.to(t), Tensor(), true),
                        Contains(std::string(kOp) + ": remat's fused CUDA attention supports Float and Double "
                                                    "inputs, but got query.dtype: " + toString(t)));
  }
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q, k.to(kDouble), v, Tensor(), true),
                      Contains("Expected query, key, and value to have the same dtype, but got query.dtype: Float "
                               "key.dtype: Double and value.dtype: Float instead."));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(cuda_randn({2, 3, 4}, 45), k, v, Tensor(), true),
                      Contains(std::string(kOp) + ": expected query, key and value to be 4-D ([B, H, L, E]), but got "
                                                  "shapes [2, 3, 4], [1, 2, 5, 4] and [1, 2, 5, 4]"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q, k, cuda_randn({1, 2, 6, 4}, 46), Tensor(), true),
                      Contains("key and value must have the same shape [B, H, S, E], but got [1, 2, 5, 4] and "
                               "[1, 2, 6, 4]"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(cuda_randn({1, 3, 3, 4}, 47), k, v, Tensor(), true),
                      Contains("must agree in B, H and E (Q/K/V should have the same head size), but got "
                               "[1, 3, 3, 4] and [1, 2, 5, 4]"));
  const Tensor wide = cuda_randn({1, 1, 2, 257}, 48);
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(wide, wide, wide, Tensor(), true),
                      Contains(std::string(kOp) + ": the head dim E must be between 1 and 256 for remat's fused CUDA "
                                                  "attention, but got E = 257"));
  REQUIRE_THROWS_WITH(
      _scaled_dot_product_efficient_attention(q.to(Device{kCPU}), k.to(Device{kCPU}), v.to(Device{kCPU}), Tensor(),
                                              true),
      Contains(std::string("Could not run '") + kOp + "' with arguments from the 'CPU' backend"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention(q, k.to(Device{kCPU}), v, Tensor(), true),
                      Contains("Expected all tensors to be on the same device"));
  // The backward: without the forward's logsumexp (compute_log_sumexp=false), and with a wrong grad_out.
  auto [out, lse, seed, offset] = _scaled_dot_product_efficient_attention(q, k, v, Tensor(), false);
  REQUIRE_THROWS_WITH(
      _scaled_dot_product_efficient_attention_backward(q, q, k, v, Tensor(), out, lse, seed, offset, 0.0),
      Contains(std::string(kBackwardOp) + ": expected a contiguous logsumexp of shape [1, 2, 32] and dtype Float (the "
                                          "forward's, run with compute_log_sumexp=True), but got [1, 2, 0] Float"));
  auto fwd = _scaled_dot_product_efficient_attention(q, k, v, Tensor(), true);
  const Tensor strided_lse = transpose(std::get<1>(fwd).transpose(1, 2).contiguous(), 1, 2);  // [1, 2, 32], not contiguous
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention_backward(q, q, k, v, Tensor(), std::get<0>(fwd),
                                                                       strided_lse, seed, offset, 0.0),
                      Contains(std::string(kBackwardOp) + ": expected a contiguous logsumexp of shape [1, 2, 32] and "
                                                          "dtype Float (the forward's, run with "
                                                          "compute_log_sumexp=True), but got [1, 2, 32] Float"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention_backward(k, q, k, v, Tensor(), std::get<0>(fwd),
                                                                       std::get<1>(fwd), seed, offset, 0.0),
                      Contains(std::string(kBackwardOp) + ": grad_out and out must have query's shape [1, 2, 3, 4], "
                                                          "but got [1, 2, 5, 4] and [1, 2, 3, 4]"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention_backward(q.to(kDouble), q, k, v, Tensor(),
                                                                       std::get<0>(fwd), std::get<1>(fwd), seed,
                                                                       offset, 0.0),
                      Contains(std::string(kBackwardOp) + ": grad_out and out must have query's dtype Float, but got "
                                                          "Double and Float"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_efficient_attention_backward(q, q, k, v, Tensor(), std::get<0>(fwd),
                                                                       std::get<1>(fwd), seed, offset, 0.5),
                      Contains(std::string(kBackwardOp) + ": dropout_p = 0.5 is not supported"));
}

TEST_CASE("sdpa on CUDA under FLASH_ATTENTION: arguments the fused op cannot run say why", "[attention][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  sdpa_kernel guard(SDPBackend::FLASH_ATTENTION);
  const Tensor q = cuda_randn({1, 2, 3, 4}, 51).to(kBFloat16);
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, q, q),
                      Contains("aten::scaled_dot_product_attention: No available kernel. Aborting execution. "
                               "FLASH_ATTENTION is the only backend enabled (sdpa_kernel) and cannot run these "
                               "arguments: on CUDA it takes Float and Double, got BFloat16"));
  const Tensor wide = cuda_randn({1, 1, 2, 300}, 52);
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(wide, wide, wide),
                      Contains("cannot run these arguments: on CUDA it needs a head dim between 1 and 256, got 300"));
  const Tensor q4 = cuda_randn({1, 2, 3, 4}, 53);
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q4, q4, q4, false, 0.1),
                      Contains("cannot run these arguments: it has no dropout, got dropout_p = 0.1"));
  // With MATH enabled too, those run on the math path.
  sdpa_kernel both(std::vector<SDPBackend>{SDPBackend::MATH, SDPBackend::FLASH_ATTENTION});
  CountOps ops;
  Tensor out = scaled_dot_product_attention(wide, wide, wide);
  CHECK(ops.counter->count(kOp) == 0);
  CHECK(ops.counter->count("aten::_softmax") == 1);
}

TEST_CASE("fused attention: a Meta dry run imitating CUDA allocates what CUDA does, forward and backward",
          "[attention][gpu][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const int64_t B = 2, H = 3, L = 40, S = 40, E = 16;
  // q, k, v as a GPT block makes them: views of [B, L, H, E] tensors.
  auto step = [&](Device device) {
    const TensorOptions o = TensorOptions().dtype(kFloat).device(device);
    Tensor qb = empty({B, L, H, E}, o).requires_grad_(true), kb = empty({B, S, H, E}, o).requires_grad_(true);
    Tensor vb = empty({B, S, H, E}, o).requires_grad_(true);
    if (!device.is_meta()) {
      for (Tensor* t : {&qb, &kb, &vb}) {
        autograd::NoGradGuard no_grad;
        t->copy_(random_cpu(t->sizes(), kFloat, 60).to(device));
      }
    }
    std::vector<int64_t> deltas;
    {
      MemoryTracker tracker(device);
      sdpa_kernel guard(SDPBackend::FLASH_ATTENTION);
      CountOps ops;
      Tensor out = scaled_dot_product_attention(transpose(qb, 1, 2), transpose(kb, 1, 2), transpose(vb, 1, 2), true);
      sum(out).backward();
      CHECK(ops.counter->count(kOp) == 1);
      CHECK(ops.counter->count(kBackwardOp) == 1);
      for (const MemoryEvent& e : tracker.timeline()) deltas.push_back(e.delta);
    }
    return deltas;
  };
  const std::vector<int64_t> measured = step(cuda0());
  std::vector<int64_t> predicted;
  {
    DryRun dry(kCUDA);
    predicted = step(Device{kMeta});
  }
  CHECK(measured.size() > 4);
  CHECK(measured == predicted);
}
