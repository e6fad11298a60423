// Tests nn/llama.cpp against PyTorch: the loss and every parameter's gradient of nn::Llama in f64
// equal those of the PyTorch twin (bench/torch_llama.py, torchtitan's model) on the same weights
// and batch, read from tests/nn/data/llama_golden_*.safetensors (written by tools/llama_golden.py).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "remat.h"

using namespace remat;

namespace {

std::string runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  return dir ? std::string(dir) + "/remat/" + path : path;
}

// Largest |a - b| over the largest |b|: the error relative to the tensor's scale.
double scaled_error(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return scale > 0 ? err / scale : err;
}

void check_golden(const std::string& name) {
  nn::Metadata meta;
  nn::NamedTensors file = nn::load_safetensors(runfile("tests/nn/data/llama_golden_" + name + ".safetensors"), &meta);
  std::map<std::string, Tensor> t(file.begin(), file.end());
  nlohmann::json j = nlohmann::json::parse(meta.at("config"));
  nn::LlamaConfig c;
  c.dim = j["dim"];
  c.n_layers = j["n_layers"];
  c.n_heads = j["n_heads"];
  c.n_kv_heads = j["n_kv_heads"];
  c.vocab_size = j["vocab_size"];
  c.multiple_of = j["multiple_of"];
  c.ffn_dim_multiplier = j["ffn_dim_multiplier"];
  c.norm_eps = j["norm_eps"];
  c.rope_theta = j["rope_theta"];
  c.rope_scaling = j["rope_scaling"];
  c.max_seq_len = j["max_seq_len"];
  c.options = TensorOptions().dtype(kDouble);
  nn::Llama model(c);
  nn::NamedTensors state;
  for (const auto& [n, p] : model.named_parameters()) {
    INFO(n);
    REQUIRE(t.count(n) == 1);
    state.emplace_back(n, t.at(n));
  }
  for (const auto& [n, b] : model.named_buffers()) state.emplace_back(n, b);
  nn::load_state_dict(model, state);
  nn::LlamaOutput out = model.forward(t.at("input.tokens"), t.at("input.targets"));
  out.loss.backward();
  const double loss_error = std::abs(out.loss.item() - t.at("loss").item()) / std::abs(t.at("loss").item());
  CHECK(loss_error < 1e-12);
  double worst = 0;
  std::string worst_name;
  for (const auto& [n, p] : model.named_parameters()) {
    INFO(n);
    REQUIRE(p.grad().defined());
    const double e = scaled_error(p.grad(), t.at("grad." + n));
    CHECK(e < 1e-10);
    if (e > worst) worst = e, worst_name = n;
  }
  WARN(name << ": loss relative error " << loss_error << ", worst gradient error " << worst << " (" << worst_name
            << ", relative to its largest element)");
}

}  // namespace

TEST_CASE("Llama in f64 matches PyTorch's torchtitan twin: debugmodel's head shape", "[llama][golden]") {
  check_golden("debugmodel_small");
}

TEST_CASE("Llama in f64 matches PyTorch's torchtitan twin: grouped-query attention (8 heads over 2)",
          "[llama][golden]") {
  check_golden("gqa");
}
