// Tests nn/transformer.cpp: MLP, CausalSelfAttention and Block shapes, causality, the residual
// path, errors, and the scope path a selective-checkpoint policy sees for each op.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "remat.h"
#include "tests/testing/block_calls.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::max_abs_diff;
using remat::testing::seeded_randn;

TEST_CASE("MLP, attention and Block map [B, T, C] to [B, T, C]", "[transformer]") {
  Generator gen(1);
  nn::MLP mlp(8, 32, 0.0, true, &gen);
  CHECK(mlp.fc1->weight.sizes() == Shape{32, 8});
  CHECK(mlp.fc2->weight.sizes() == Shape{8, 32});
  nn::CausalSelfAttention attn(8, 2, 0.0, true, &gen);
  CHECK(attn.qkv->weight.sizes() == Shape{24, 8});
  nn::Block block(8, 2, 0.0, true, false, &gen);
  nn::Block rms_block(8, 4, 0.0, false, /*rms_norm=*/true, &gen);
  CHECK(dynamic_cast<nn::RMSNorm*>(rms_block.ln1.get()) != nullptr);
  CHECK(dynamic_cast<nn::LayerNorm*>(block.ln1.get()) != nullptr);
  CHECK_FALSE(rms_block.attn->qkv->bias.defined());

  Tensor x = randn({2, 5, 8});
  CHECK(mlp.forward(x).sizes() == Shape{2, 5, 8});
  CHECK(attn.forward(x).sizes() == Shape{2, 5, 8});
  CHECK(block.forward(x).sizes() == Shape{2, 5, 8});
  CHECK(rms_block.forward(x).sizes() == Shape{2, 5, 8});
}

TEST_CASE("CausalSelfAttention: position t depends only on positions <= t", "[transformer]") {
  Generator gen(3);
  nn::CausalSelfAttention attn(8, 2, 0.0, true, &gen, kDouble);
  Tensor x = seeded_randn({1, 6, 8}, 4);
  Tensor y = attn.forward(x);
  // Change the inputs from position 3 on.
  Tensor x2 = cat({slice(x, 1, 0, 3), seeded_randn({1, 3, 8}, 5)}, 1);
  Tensor y2 = attn.forward(x2);
  CHECK(max_abs_diff(slice(y, 1, 0, 3), slice(y2, 1, 0, 3)) < 1e-12);
  CHECK(max_abs_diff(slice(y, 1, 3, 6), slice(y2, 1, 3, 6)) > 1e-3);
}

TEST_CASE("Block is x + attn(ln1(x)), then + mlp(ln2(.)): zero projections give the identity", "[transformer]") {
  Generator gen(5);
  nn::Block block(8, 2, 0.0, true, false, &gen, kDouble);
  {
    autograd::NoGradGuard no_grad;
    for (Tensor* t : {&block.attn->proj->weight, &block.attn->proj->bias, &block.mlp->fc2->weight,
                      &block.mlp->fc2->bias})
      zero_(*t);
  }
  Tensor x = seeded_randn({2, 3, 8}, 6);
  CHECK(equal(block.forward(x), x));
}

TEST_CASE("transformer module errors", "[transformer]") {
  REQUIRE_THROWS_WITH(nn::CausalSelfAttention(10, 3, 0.0, true, nullptr),
                      Contains("CausalSelfAttention: n_embd (10) must be divisible by n_head (3)"));
  REQUIRE_THROWS_WITH(nn::CausalSelfAttention(10, 0, 0.0, true, nullptr), Contains("must be divisible by n_head (0)"));
  nn::CausalSelfAttention attn(8, 2, 0.0, true, nullptr);
  REQUIRE_THROWS_WITH(attn.forward(randn({5, 8})), Contains("CausalSelfAttention: expected input [B, T, 8], got [5, 8]"));
  REQUIRE_THROWS_WITH(attn.forward(randn({1, 5, 6})), Contains("got [1, 5, 6]"));
}

namespace {

struct PolicyCall {
  std::string scope, op;
  int64_t index;
  bool is_recompute;
};

nn::GPTConfig two_layers() {
  nn::GPTConfig c;
  c.vocab_size = 10;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  return c;
}

}  // namespace

TEST_CASE("a selective-checkpoint policy sees each op under its module's scope path", "[transformer][scope]") {
  auto calls = std::make_shared<std::vector<PolicyCall>>();
  PolicyFn record = [calls](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                            const std::vector<IValue>&) {
    calls->push_back({ctx.scope, op.name(), ctx.index, ctx.is_recompute});
    return CheckpointPolicy::PREFER_RECOMPUTE;
  };
  nn::GPT gpt(two_layers());
  gpt.set_checkpointing(nn::ActivationCheckpointing::selective(record));
  Tensor idx = from_vector({1, 2, 3, 4, 5, 6}, {1, 6}, kLong);
  nn::GPTOutput out = gpt.forward(idx, from_vector({2, 3, 4, 5, 6, 7}, {1, 6}, kLong));
  const size_t forward_calls = calls->size();
  out.loss.backward();
  // The policy is asked in forward only, never during recomputation.
  CHECK(calls->size() == forward_calls);

  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> seen;  // (scope, op) -> indices
  for (const PolicyCall& c : *calls) {
    CHECK_FALSE(c.is_recompute);
    // Only the checkpointed blocks are regions: every scope is inside "layers.<i>".
    CHECK((c.scope.rfind("layers.0", 0) == 0 || c.scope.rfind("layers.1", 0) == 0));
    seen[{c.scope, c.op}].push_back(c.index);
  }
  for (const std::string block : {"layers.0", "layers.1"}) {
    INFO(block);
    // Each linear of a block is one addmm; addmm's occurrences in the region are counted in
    // order: qkv 0, proj 1, fc1 2, fc2 3.
    CHECK(seen[{block + ".attn.qkv", "aten::addmm"}] == std::vector<int64_t>{0});
    CHECK(seen[{block + ".attn.proj", "aten::addmm"}] == std::vector<int64_t>{1});
    CHECK(seen[{block + ".mlp.fc1", "aten::addmm"}] == std::vector<int64_t>{2});
    CHECK(seen[{block + ".mlp.fc2", "aten::addmm"}] == std::vector<int64_t>{3});
    CHECK(seen[{block + ".mlp.act", "aten::gelu"}] == std::vector<int64_t>{0});
    CHECK(seen[{block + ".attn.core", "aten::_softmax"}] == std::vector<int64_t>{0});
    CHECK(seen[{block + ".attn.core", "aten::bmm"}].size() == 2);  // q k^T and attn v
    CHECK(seen[{block + ".ln1", "aten::native_layer_norm"}] == std::vector<int64_t>{0});
    CHECK(seen[{block + ".ln2", "aten::native_layer_norm"}] == std::vector<int64_t>{1});
    CHECK(seen[{block, "aten::add"}] == std::vector<int64_t>{0, 1});  // the two residual adds
  }
  // A policy keyed on the scope: recompute only fc2's output, save everything else. Gradients
  // equal the plain run's.
  nn::GPT plain(two_layers()), scoped(two_layers());
  scoped.set_checkpointing(nn::ActivationCheckpointing::selective(
      policies::compose({policies::recompute_scopes({"*.mlp.fc2"}), policies::save_all()})));
  Tensor targets = from_vector({2, 3, 4, 5, 6, 7}, {1, 6}, kLong);
  plain.forward(idx, targets).loss.backward();
  scoped.forward(idx, targets).loss.backward();
  std::vector<Tensor> pa = plain.parameters(), pb = scoped.parameters();
  for (size_t i = 0; i < pa.size(); ++i) CHECK(equal(pa[i].grad(), pb[i].grad()));
}


TEST_CASE("a block runs the PyTorch GPT's op calls, call for call, in f32 and bf16", "[transformer][pytorch]") {
  // tests/nn/data/gpt_block_calls.json: the calls of the PyTorch twin's block (bench/torch_reference.py,
  // nanoGPT's code), recorded by tools/gpt_block_calls.py. The same calls here are what lets a plan
  // file made by remat apply to the twin call by call (python/remat_plan, docs/pytorch.md).
  const nlohmann::json doc = remat::testing::read_json("tests/nn/data/gpt_block_calls.json");
  const int64_t B = doc["sizes"]["batch"], T = doc["sizes"]["seq"], C = doc["sizes"]["embd"], H = doc["sizes"]["heads"];
  for (const auto& [name, dtype] : {std::pair<std::string, ScalarType>{"f32", kFloat}, {"bf16", kBFloat16}}) {
    INFO(name);
    const std::vector<std::string> expected = remat::testing::expected_calls(doc[name]);
    Generator g(0);
    nn::Block block(C, H, 0.0, /*bias=*/true, /*rms_norm=*/false, &g, TensorOptions().dtype(dtype));
    Tensor x = seeded_randn({B, T, C}, 1, dtype).requires_grad_(true);
    auto rec = std::make_shared<remat::testing::CallRecorder>();
    {
      DispatchModeGuard guard(rec);
      block.forward(x);
    }
    REQUIRE(expected.size() == 52);
    CHECK(rec->calls == expected);
  }
}
