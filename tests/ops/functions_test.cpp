// Tests ops/functions.cpp: every function of the functional API reaches its dispatcher op with
// the C++ signature the kernels are registered with (a mismatch fails in typed<>()), and calls
// exactly that op.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {

// Runs f on Meta tensors: it must run, and in particular not fail on its C++ signature
// (typed<>() checks it against the registered kernels).
void reaches_its_op(const std::string& name, const std::function<void()>& f, int* ran) {
  INFO(name);
  try {
    f();
    ++*ran;
  } catch (const Error& e) {
    std::string what = e.what();
    INFO(what);
    CHECK(what.find("typed<") == std::string::npos);
    FAIL("the call threw");
  }
}

}  // namespace

TEST_CASE("every functional API entry reaches its op with a matching signature", "[functions]") {
  Tensor x = meta({2, 3}), y = meta({2, 3}), w = meta({4, 3}), b = meta({4}), m3 = meta({2, 3, 3});
  Tensor mask = meta({2, 3}, kBool), idx = meta({2}, kLong), g = meta({2, 3});
  Tensor ln_w = meta({3}), rstd = meta({2, 1}), q = meta({1, 2, 4, 8});
  Tensor mutable_x = meta({2, 3});
  int ran = 0;
  std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"add", [&] { add(x, y); }},       {"sub", [&] { sub(x, y); }},       {"mul", [&] { mul(x, y); }},
      {"div", [&] { div(x, y); }},       {"add.Scalar", [&] { add(x, 1.0); }}, {"mul.Scalar", [&] { mul(x, 2.0); }},
      {"div.Scalar", [&] { div(x, 2.0); }}, {"pow", [&] { pow(x, 2.0); }},   {"neg", [&] { neg(x); }},
      {"exp", [&] { exp(x); }},          {"log", [&] { log(x); }},          {"sin", [&] { sin(x); }},
      {"cos", [&] { cos(x); }},          {"tanh", [&] { tanh(x); }},        {"sigmoid", [&] { sigmoid(x); }},
      {"relu", [&] { relu(x); }},        {"silu", [&] { silu(x); }},        {"sqrt", [&] { sqrt(x); }},
      {"rsqrt", [&] { rsqrt(x); }},      {"abs", [&] { abs(x); }},          {"gelu", [&] { gelu(x, "tanh"); }},
      {"eq", [&] { eq(x, y); }},         {"where", [&] { where(mask, x, y); }},
      {"masked_fill", [&] { masked_fill(x, mask, 0.0); }}, {"triu", [&] { triu(x, 1); }},
      {"threshold_backward", [&] { threshold_backward(g, x, 0.0); }},
      {"sigmoid_backward", [&] { sigmoid_backward(g, x); }}, {"tanh_backward", [&] { tanh_backward(g, x); }},
      {"silu_backward", [&] { silu_backward(g, x); }},     {"gelu_backward", [&] { gelu_backward(g, x); }},
      {"mm", [&] { mm(x, meta({3, 4})); }}, {"bmm", [&] { bmm(m3, m3); }}, {"matmul", [&] { matmul(x, meta({3})); }},
      {"addmm", [&] { addmm(b, meta({5, 3}), meta({3, 4})); }}, {"linear", [&] { linear(x, w, b); }},
      {"sum", [&] { sum(x); }},          {"sum dims", [&] { sum(x, {1}, true); }}, {"mean", [&] { mean(x); }},
      {"mean dims", [&] { mean(x, {0}); }}, {"amax", [&] { amax(x, 1); }}, {"sum_to_size", [&] { sum_to_size(x, {1, 3}); }},
      {"softmax", [&] { softmax(x, -1); }}, {"log_softmax", [&] { log_softmax(x, -1); }},
      {"_softmax_backward_data", [&] { _softmax_backward_data(g, x, -1); }},
      {"_log_softmax_backward_data", [&] { _log_softmax_backward_data(g, x, -1); }},
      {"layer_norm", [&] { layer_norm(x, {3}, ln_w, ln_w); }},
      {"native_layer_norm", [&] { native_layer_norm(x, {3}, ln_w, ln_w, 1e-5); }},
      {"native_layer_norm_backward", [&] { native_layer_norm_backward(g, x, {3}, rstd, rstd, ln_w, ln_w); }},
      {"rms_norm", [&] { rms_norm(x, {3}, ln_w); }},
      {"_fused_rms_norm", [&] { _fused_rms_norm(x, {3}, ln_w, 1e-6); }},
      {"_fused_rms_norm_backward", [&] { _fused_rms_norm_backward(g, x, {3}, rstd, ln_w); }},
      {"dropout", [&] { dropout(x, 0.5, true); }}, {"native_dropout", [&] { native_dropout(x, 0.5); }},
      {"native_dropout_backward", [&] { native_dropout_backward(g, mask, 2.0); }},
      {"embedding", [&] { embedding(w, idx); }},
      {"embedding_dense_backward", [&] { embedding_dense_backward(meta({2, 3}), idx, 4); }},
      {"cross_entropy", [&] { cross_entropy(x, idx); }},
      {"cross_entropy_backward", [&] { cross_entropy_backward(meta({}), x, idx); }},
      {"scaled_dot_product_attention", [&] { scaled_dot_product_attention(q, q, q, true); }},
      {"view", [&] { view(x, {6}); }},   {"reshape", [&] { reshape(x, {3, 2}); }},
      {"transpose", [&] { transpose(x, 0, 1); }}, {"permute", [&] { permute(x, {1, 0}); }},
      {"slice", [&] { slice(x, 1, 0, 2); }},
      {"slice_backward", [&] { slice_backward(meta({2, 1}), {2, 3}, 1, 0, 2, 2); }},
      {"unsqueeze", [&] { unsqueeze(x, 0); }}, {"squeeze", [&] { squeeze(x, 0); }},
      {"expand", [&] { expand(x, {2, 2, 3}); }}, {"detach", [&] { detach(x); }},
      {"clone", [&] { clone(x); }},      {"contiguous", [&] { contiguous(x); }},
      {"_to_copy", [&] { _to_copy(x, kDouble, std::nullopt); }}, {"cat", [&] { cat({x, y}, 1); }},
      {"zeros_like", [&] { zeros_like(x); }}, {"ones_like", [&] { ones_like(x); }},
      {"add_", [&] { add_(mutable_x, y); }}, {"add_.Scalar", [&] { add_(mutable_x, 1.0); }},
      {"mul_", [&] { mul_(mutable_x, y); }}, {"mul_.Scalar", [&] { mul_(mutable_x, 2.0); }},
      {"relu_", [&] { relu_(mutable_x); }}, {"zero_", [&] { zero_(mutable_x); }},
      {"fill_", [&] { fill_(mutable_x, 1.0); }}, {"copy_", [&] { copy_(mutable_x, y); }},
      {"uniform_", [&] { uniform_(mutable_x); }}, {"normal_", [&] { normal_(mutable_x); }},
  };
  for (auto& [name, f] : calls) reaches_its_op(name, f, &ran);
  CHECK(ran == static_cast<int>(calls.size()));
}

TEST_CASE("each function is one call of the op it names", "[functions]") {
  auto mode = std::make_shared<RecordingMode>();
  Tensor x = meta({2, 3});
  {
    DispatchModeGuard g(mode);
    add(x, x);
    add(x, 2.0);
    sum(x, {0});
    transpose(x, 0, 1);
    cat({x, x});
    _to_copy(x, kDouble, std::nullopt);
  }
  CHECK(mode->calls["aten::add"] == 1);
  CHECK(mode->calls["aten::add.Scalar"] == 1);
  CHECK(mode->calls["aten::sum"] == 1);
  CHECK(mode->calls["aten::transpose"] == 1);
  CHECK(mode->calls["aten::cat"] == 1);
  CHECK(mode->calls["aten::_to_copy"] == 1);
  CHECK(mode->calls.size() == 6);
  // composite ops decompose: the mode sees their parts
  auto parts = std::make_shared<RecordingMode>();
  {
    DispatchModeGuard g(parts);
    linear(x, meta({4, 3}), meta({4}));
    reshape(x.t(), {6});
  }
  CHECK(parts->calls.count("aten::linear") == 0);
  CHECK(parts->calls["aten::addmm"] == 1);
  CHECK(parts->calls.count("aten::reshape") == 0);
  CHECK(parts->calls["aten::clone"] == 1);
}
