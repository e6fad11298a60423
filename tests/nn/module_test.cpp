// Tests nn/module.cpp: the named tree (parameter names and order, tied parameters listed once),
// buffers and state_dict, train/eval propagation, zero_grad, dtype conversion keeping ties.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "remat.h"

using namespace remat;
using Catch::Contains;

namespace {

nn::GPTConfig config(int64_t layers, bool tie) {
  nn::GPTConfig c;
  c.vocab_size = 13;
  c.block_size = 8;
  c.n_layer = layers;
  c.n_head = 2;
  c.n_embd = 8;
  c.tie_weights = tie;
  return c;
}

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& [n, t] : named) out.push_back(n);
  return out;
}

// A module with a parameter, an absent parameter, a buffer and a child.
struct Leafy : nn::Module {
  Leafy() : Module("Leafy") {
    register_parameter("w", ones({2}));
    register_parameter("absent", Tensor());
    register_buffer("running", zeros({3}));
    child = register_module("child", std::make_shared<nn::Linear>(2, 2));
  }
  std::shared_ptr<nn::Linear> child;
};

}  // namespace

TEST_CASE("GPT's named_parameters: depth first in registration order, tied weight once", "[module]") {
  nn::GPT gpt(config(4, /*tie=*/true));
  std::vector<std::string> names = names_of(gpt.named_parameters());
  const std::vector<std::string> block = {"ln1.weight",      "ln1.bias",       "attn.qkv.weight", "attn.qkv.bias",
                                          "attn.proj.weight", "attn.proj.bias", "ln2.weight",      "ln2.bias",
                                          "mlp.fc1.weight",  "mlp.fc1.bias",   "mlp.fc2.weight",  "mlp.fc2.bias"};
  std::vector<std::string> expected = {"wte.weight", "wpe.weight"};
  for (int i = 0; i < 4; ++i)
    for (const std::string& n : block) expected.push_back("layers." + std::to_string(i) + "." + n);
  expected.push_back("ln_f.weight");
  expected.push_back("ln_f.bias");
  // lm_head.weight is wte.weight: listed once, under its first name.
  CHECK(names == expected);
  CHECK(std::count(names.begin(), names.end(), "layers.3.mlp.fc2.weight") == 1);
  CHECK(gpt.lm_head->weight.is_same(gpt.wte->weight));

  // The named tensor is the module's own parameter (same TensorImpl).
  for (const auto& [n, t] : gpt.named_parameters())
    if (n == "layers.3.mlp.fc2.weight") CHECK(t.is_same(gpt.blocks[3]->mlp->fc2->weight));

  nn::GPT untied(config(4, /*tie=*/false));
  std::vector<std::string> untied_names = names_of(untied.named_parameters());
  REQUIRE(untied_names.size() == expected.size() + 1);
  CHECK(untied_names.back() == "lm_head.weight");
  // Parameter counts: the tied model has vocab * n_embd fewer.
  CHECK(untied.num_parameters() - gpt.num_parameters() == 13 * 8);
}

TEST_CASE("parameters(): named_parameters()'s tensors in its order, tied weight once, without the names", "[module]") {
  for (bool tie : {true, false}) {
    nn::GPT gpt(config(2, tie));
    for (bool recurse : {true, false}) {
      std::vector<std::pair<std::string, Tensor>> named = gpt.named_parameters(recurse);
      std::vector<Tensor> tensors = gpt.parameters(recurse);
      REQUIRE(tensors.size() == named.size());
      for (size_t i = 0; i < named.size(); ++i) CHECK(tensors[i].is_same(named[i].second));
    }
    // Only the tied model's lm_head.weight is wte.weight (listed once); recurse=false: the root owns none.
    CHECK(gpt.parameters().size() == (tie ? 2u + 2 * 12 + 2 : 2u + 2 * 12 + 3));
    CHECK(gpt.parameters(/*recurse=*/false).empty());
    gpt.parameters()[0].set_grad(ones({13, 8}));
    gpt.zero_grad();
    for (const Tensor& t : gpt.parameters()) CHECK_FALSE(t.grad().defined());
  }
}

TEST_CASE("GPT's parameter count matches the architecture", "[module]") {
  nn::GPT gpt(config(2, true));
  const int64_t C = 8, V = 13, T = 8;
  const int64_t per_block = 2 * (2 * C)              // ln1, ln2
                            + (C * 3 * C + 3 * C)    // qkv
                            + (C * C + C)            // proj
                            + (C * 4 * C + 4 * C)    // fc1
                            + (4 * C * C + C);       // fc2
  CHECK(gpt.num_parameters() == V * C + T * C + 2 * per_block + 2 * C);
  CHECK(gpt.parameters().size() == gpt.named_parameters().size());
}

TEST_CASE("named_parameters(recurse = false), buffers, absent parameters and state_dict", "[module]") {
  Leafy m;
  CHECK(names_of(m.named_parameters()) == std::vector<std::string>{"w", "child.weight", "child.bias"});
  CHECK(names_of(m.named_parameters(/*recurse=*/false)) == std::vector<std::string>{"w"});
  CHECK(names_of(m.named_buffers()) == std::vector<std::string>{"running"});
  CHECK(names_of(m.state_dict()) == std::vector<std::string>{"w", "child.weight", "child.bias", "running"});
  CHECK(m.child->name() == "child");
  CHECK(m.name().empty());
  CHECK(m.named_children().size() == 1);
  // Parameters are leaves that require grad; buffers are not trained.
  for (const Tensor& p : m.parameters()) {
    CHECK(p.is_leaf());
    CHECK(p.requires_grad());
  }
  CHECK_FALSE(m.named_buffers()[0].second.requires_grad());
}

TEST_CASE("register_parameter refuses bad and duplicate names", "[module]") {
  nn::Module m("Custom");
  m.register_parameter("a", ones({1}));
  REQUIRE_THROWS_WITH(m.register_parameter("a", ones({1})), Contains("Custom: attribute 'a' already exists"));
  REQUIRE_THROWS_WITH(m.register_parameter("x.y", ones({1})), Contains("parameter name 'x.y'") && Contains("no '.'"));
  REQUIRE_THROWS_WITH(m.register_parameter("", ones({1})), Contains("must be non-empty"));
  REQUIRE_THROWS_WITH(m.register_buffer("b.c", ones({1})), Contains("buffer name 'b.c'"));
}

TEST_CASE("train() and eval() reach every submodule", "[module]") {
  nn::GPT gpt(config(2, true));
  std::function<void(const nn::Module&, bool)> all = [&](const nn::Module& m, bool training) {
    CHECK(m.is_training() == training);
    for (const auto& [n, c] : m.named_children()) all(*c, training);
  };
  all(gpt, true);  // modules start in training mode
  gpt.eval();
  all(gpt, false);
  CHECK_FALSE(gpt.blocks[1]->mlp->drop->is_training());
  gpt.train();
  all(gpt, true);
  gpt.blocks[0]->train(false);  // a subtree only
  CHECK_FALSE(gpt.blocks[0]->attn->is_training());
  CHECK(gpt.blocks[1]->attn->is_training());
}

TEST_CASE("zero_grad drops every parameter's gradient", "[module]") {
  nn::GPT gpt(config(2, true));
  Tensor idx = from_vector({1, 2, 3, 4}, {1, 4}, kLong);
  gpt.forward(idx, from_vector({2, 3, 4, 5}, {1, 4}, kLong)).loss.backward();
  for (const Tensor& p : gpt.parameters()) CHECK(p.grad().defined());
  gpt.zero_grad();
  for (const Tensor& p : gpt.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("to(kDouble) converts every parameter, keeps ties and leaves", "[module]") {
  nn::GPT gpt(config(2, true));
  std::vector<Tensor> before;
  for (const Tensor& p : gpt.parameters()) before.push_back(p.detach().clone());
  gpt.to(kDouble);
  REQUIRE(gpt.lm_head->weight.is_same(gpt.wte->weight));
  std::vector<Tensor> after = gpt.parameters();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].dtype() == kDouble);
    CHECK(after[i].is_leaf());
    CHECK(after[i].requires_grad());
    CHECK(equal(after[i], before[i].to(kDouble)));
  }
  // The model runs in double, and the tied weight gets one gradient from both uses.
  Tensor idx = from_vector({1, 2, 3}, {1, 3}, kLong);
  nn::GPTOutput out = gpt.forward(idx, from_vector({2, 3, 4}, {1, 3}, kLong));
  CHECK(out.logits.dtype() == kDouble);
  out.loss.backward();
  CHECK(gpt.wte->weight.grad().defined());
  CHECK(gpt.lm_head->weight.grad().is_same(gpt.wte->weight.grad()));
}
