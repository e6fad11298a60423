// Tests ops/autograd/derivative_rules.h and ops/autograd/derivatives.h: every Def that gives a
// derivative has it registered under its own name, the rules are exactly the table of derivative
// rules remat had before they moved into the Defs (what each saves, for whose gradients, its
// flags), the ops with a rule's autograd kernel are exactly those, and a second rule for an op, or
// one without a name, is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ops/autograd/derivatives.h"
#include "remat.h"
#include "tests/testing/matchers.h"

using namespace remat;
using Catch::Matchers::Contains;
using ops::autograd::Derivative;
using ops::autograd::SavedTensor;
using remat::testing::What;

namespace {

std::string joined(const std::vector<size_t>& v, const char* sep) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? sep : "") << v[i];
  return s.str();
}

// One line per rule: its op, saved tensors (a2>0.1: argument 2, read by arguments 0 and 1's
// gradients; r1: output 1), saved geometries, non-differentiable outputs and flags.
std::string summary(const Derivative& d) {
  std::ostringstream s;
  s << d.op << " saved=";
  for (size_t i = 0; i < d.saved.size(); ++i) {
    const SavedTensor& t = d.saved[i];
    s << (i ? "," : "") << (t.kind == SavedTensor::Kind::Argument ? "a" : "r") << t.index << ">"
      << joined(t.read_by, ".");
  }
  s << " geo=" << joined(d.saved_geometries, ",") << " ndout=" << joined(d.non_differentiable_outputs, ",")
    << " inplace=" << d.inplace << " nd=" << d.non_differentiable;
  return s.str();
}

std::vector<Derivative> all_derivatives() {
  std::vector<Derivative> all;
  ops::autograd::for_each_derivative([&](Derivative d) { all.push_back(std::move(d)); });
  return all;
}

// The rules of ops/autograd/derivatives.cpp's table before they moved into the Defs (issue 22),
// _masked_softmax's two (issue 26), and those of t, split and _unsafe_view (issue 41: the ops
// PyTorch's linear, matmul and reshape issue; softmax and log_softmax named _softmax and
// _log_softmax, as a dispatch mode sees them in PyTorch).
const std::vector<std::string> kRules = {
      "aten::_fused_rms_norm saved=a0>0.2,a2>0.2,r1>0.2 geo= ndout=1 inplace=0 nd=0",
      "aten::_fused_rms_norm_backward saved=a0>1.4,a1>0.1.4,a3>0.1.4,a4>0.1.4 geo= ndout= inplace=0 nd=0",
      "aten::_log_softmax saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::_log_softmax_backward_data saved=a0>1,a1>0.1 geo= ndout= inplace=0 nd=0",
      "aten::_masked_softmax saved=r0>0,a1>0 geo= ndout= inplace=0 nd=0",
      "aten::_masked_softmax_backward saved=a0>1,a1>0.1,a2>0.1 geo= ndout= inplace=0 nd=0",
      "aten::_scaled_dot_product_efficient_attention saved=a0>0.1.2,a1>0.1.2,a2>0.1.2,r0>0.1.2,r1>0.1.2,r2>0.1.2,r3>0.1.2 geo= ndout=1,2,3 inplace=0 nd=0",
      "aten::_scaled_dot_product_flash_attention_for_cpu saved=a0>0.1.2,a1>0.1.2,a2>0.1.2,r0>0.1.2,r1>0.1.2 geo= ndout=1 inplace=0 nd=0",
      "aten::_softmax saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::_softmax_backward_data saved=a0>1,a1>0.1 geo= ndout= inplace=0 nd=0",
      "aten::_to_copy saved= geo= ndout= inplace=0 nd=0",
      "aten::_unsafe_view saved= geo= ndout= inplace=0 nd=0",
      "aten::abs saved=a0>0 geo= ndout= inplace=0 nd=0",
      "aten::add saved= geo= ndout= inplace=0 nd=0",
      "aten::add.Scalar saved= geo= ndout= inplace=0 nd=0",
      "aten::add_ saved= geo= ndout= inplace=1 nd=0",
      "aten::add_.Scalar saved= geo= ndout= inplace=1 nd=0",
      "aten::addcdiv_ saved=a1>2,a2>1.2 geo= ndout= inplace=1 nd=0",
      "aten::addcmul_ saved=a1>2,a2>1 geo= ndout= inplace=1 nd=0",
      "aten::addmm saved=a1>2,a2>1 geo=2 ndout= inplace=0 nd=0",
      "aten::amax saved=a0>0,r0>0 geo= ndout= inplace=0 nd=0",
      "aten::as_strided saved= geo=0 ndout= inplace=0 nd=0",
      "aten::bmm saved=a0>1,a1>0 geo= ndout= inplace=0 nd=0",
      "aten::cat saved= geo= ndout= inplace=0 nd=0",
      "aten::clone saved= geo= ndout= inplace=0 nd=0",
      "aten::conj_physical saved= geo= ndout= inplace=0 nd=0",
      "aten::copy_ saved= geo= ndout= inplace=1 nd=0",
      "aten::cos saved=a0>0 geo= ndout= inplace=0 nd=0",
      "aten::cross_entropy saved=a0>0,a1>0 geo= ndout= inplace=0 nd=0",
      "aten::cross_entropy_backward saved=a0>1,a1>0.1,a2>0.1 geo= ndout= inplace=0 nd=0",
      "aten::detach saved= geo= ndout= inplace=0 nd=1",
      "aten::div saved=a0>1,a1>0.1 geo= ndout= inplace=0 nd=0",
      "aten::div.Scalar saved= geo= ndout= inplace=0 nd=0",
      "aten::embedding saved=a1>0 geo= ndout= inplace=0 nd=0",
      "aten::embedding_dense_backward saved=a1>0 geo= ndout= inplace=0 nd=0",
      "aten::eq saved= geo= ndout= inplace=0 nd=1",
      "aten::exp saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::expand saved= geo= ndout= inplace=0 nd=0",
      "aten::fill_ saved= geo= ndout= inplace=1 nd=0",
      "aten::gelu saved=a0>0 geo= ndout= inplace=0 nd=0",
      "aten::gelu_backward saved=a0>1,a1>0.1 geo= ndout= inplace=0 nd=0",
      "aten::lerp_.Scalar saved= geo= ndout= inplace=1 nd=0",
      "aten::log saved=a0>0 geo= ndout= inplace=0 nd=0",
      "aten::masked_fill saved=a1>0 geo= ndout= inplace=0 nd=0",
      "aten::maximum saved=a0>0.1,a1>0.1,r0>0.1 geo= ndout= inplace=0 nd=0",
      "aten::mean saved= geo= ndout= inplace=0 nd=0",
      "aten::minimum saved=a0>0.1,a1>0.1,r0>0.1 geo= ndout= inplace=0 nd=0",
      "aten::mm saved=a0>1,a1>0 geo=1 ndout= inplace=0 nd=0",
      "aten::mul saved=a0>1,a1>0 geo= ndout= inplace=0 nd=0",
      "aten::mul.Scalar saved= geo= ndout= inplace=0 nd=0",
      "aten::mul_ saved=a0>1,a1>0 geo= ndout= inplace=1 nd=0",
      "aten::mul_.Scalar saved= geo= ndout= inplace=1 nd=0",
      "aten::native_dropout saved=r1>0 geo= ndout=1 inplace=0 nd=0",
      "aten::native_dropout_backward saved=a1>0 geo= ndout= inplace=0 nd=0",
      "aten::native_layer_norm saved=a0>0.2,a2>0.2,a3>3,r1>0.2,r2>0.2 geo= ndout=1,2 inplace=0 nd=0",
      "aten::native_layer_norm_backward saved=a0>1.5,a1>0.1.5,a3>0.1.5,a4>0.1.5,a5>0.1.5 geo= ndout= inplace=0 nd=0",
      "aten::neg saved= geo= ndout= inplace=0 nd=0",
      "aten::normal_ saved= geo= ndout= inplace=1 nd=0",
      "aten::ones_like saved= geo= ndout= inplace=0 nd=1",
      "aten::permute saved= geo= ndout= inplace=0 nd=0",
      "aten::pow saved=a0>0 geo= ndout= inplace=0 nd=0",
      "aten::relu saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::relu_ saved=r0>0 geo= ndout= inplace=1 nd=0",
      "aten::rsqrt saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::select saved= geo= ndout= inplace=0 nd=0",
      "aten::sigmoid saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::sigmoid_backward saved=a0>1,a1>0.1 geo= ndout= inplace=0 nd=0",
      "aten::silu saved=a0>0 geo= ndout= inplace=0 nd=0",
      "aten::silu_backward saved=a0>1,a1>0.1 geo= ndout= inplace=0 nd=0",
      "aten::sin saved=a0>0 geo= ndout= inplace=0 nd=0",
      "aten::slice saved= geo= ndout= inplace=0 nd=0",
      "aten::slice_backward saved= geo= ndout= inplace=0 nd=0",
      "aten::split saved= geo= ndout= inplace=0 nd=0",
      "aten::split_with_sizes saved= geo= ndout= inplace=0 nd=0",
      "aten::sqrt saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::squeeze saved= geo= ndout= inplace=0 nd=0",
      "aten::sub saved= geo= ndout= inplace=0 nd=0",
      "aten::sum saved= geo= ndout= inplace=0 nd=0",
      "aten::t saved= geo= ndout= inplace=0 nd=0",
      "aten::tanh saved=r0>0 geo= ndout= inplace=0 nd=0",
      "aten::tanh_backward saved=a0>1,a1>0.1 geo= ndout= inplace=0 nd=0",
      "aten::threshold_backward saved=a1>0 geo= ndout= inplace=0 nd=0",
      "aten::transpose saved= geo= ndout= inplace=0 nd=0",
      "aten::triu saved= geo= ndout= inplace=0 nd=0",
      "aten::unbind.int saved= geo= ndout= inplace=0 nd=0",
      "aten::uniform_ saved= geo= ndout= inplace=1 nd=0",
      "aten::unsqueeze saved= geo= ndout= inplace=0 nd=0",
      "aten::view saved= geo= ndout= inplace=0 nd=0",
      "aten::view_as_complex saved= geo= ndout= inplace=0 nd=0",
      "aten::view_as_real saved= geo= ndout= inplace=0 nd=0",
      "aten::where saved=a0>1.2 geo= ndout= inplace=0 nd=0",
      "aten::zero_ saved= geo= ndout= inplace=1 nd=0",
      "aten::zeros_like saved= geo= ndout= inplace=0 nd=1",
};

}  // namespace

TEST_CASE("the Defs' derivatives are the table of rules, unchanged", "[derivative_rules]") {
  std::vector<std::string> rules;
  for (const Derivative& d : all_derivatives()) rules.push_back(summary(d));
  std::sort(rules.begin(), rules.end());
  CHECK(rules == kRules);
  // and none twice
  CHECK(std::adjacent_find(rules.begin(), rules.end()) == rules.end());
}

TEST_CASE("every Def that gives a derivative has it registered under its name", "[derivative_rules]") {
  int functional = 0, inplace = 0, without = 0;
  ops::for_each_def([&](auto def) {
    using Def = typename decltype(def)::type;
    if constexpr (ops::autograd::HasDerivative<Def>::value) {
      ++functional;
      INFO(Def::name);
      CHECK(find_op(Def::name).entry()->hasKernelForKey(DispatchKey::Autograd));
      CHECK(Def::derivative().op.empty());  // the name comes from the Def alone
    }
    if constexpr (ops::autograd::HasInplaceDerivative<Def>::value) {
      ++inplace;
      INFO(Def::inplace_name);
      CHECK(find_op(Def::inplace_name).entry()->hasKernelForKey(DispatchKey::Autograd));
    }
    if constexpr (!ops::autograd::HasDerivative<Def>::value && !ops::autograd::HasInplaceDerivative<Def>::value)
      ++without;
  });
  CHECK(functional + inplace == static_cast<int>(kRules.size()));
  CHECK(inplace == 13);  // add_, add_.Scalar, mul_, mul_.Scalar, relu_, zero_, fill_, copy_, ...
  // contiguous, the views' composites, the attention backward ops, the fused optimizers
  CHECK(without == 9);
  // a Def without a rule has no autograd kernel of its own (the not-implemented fallback runs),
  // unless it is a composite (it decomposes at Autograd too: ops/composite.h)
  for (const char* op : {"aten::_fused_adamw_", "aten::_fused_sgd_",
                         "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                         "aten::_scaled_dot_product_efficient_attention_backward"}) {
    INFO(op);
    CHECK_FALSE(find_op(op).entry()->hasKernelForKey(DispatchKey::Autograd));
  }
}

TEST_CASE("the ops with a rule's autograd kernel are exactly the rules' ops", "[derivative_rules]") {
  // an op with an autograd kernel and none at the mode key is one a rule registered (a composite's
  // kernel is at both)
  std::set<std::string> with_rule;
  for (const std::string& name : registered_ops()) {
    const OperatorEntry* e = find_op(name).entry();
    if (name.rfind("aten::", 0) == 0 && e->hasKernelForKey(DispatchKey::Autograd) &&
        !e->hasKernelForKey(DispatchKey::Python))
      with_rule.insert(name);
  }
  std::set<std::string> expected;
  for (const std::string& r : kRules) expected.insert(r.substr(0, r.find(' ')));
  CHECK(with_rule == expected);
}

TEST_CASE("register_derivative refuses a second rule for an op, and a rule without a name", "[derivative_rules]") {
  // aten::mul's rule, registered again (as a Def listed twice in a family's for_each_*_def would)
  std::vector<Derivative> rules;
  ops::autograd::for_each_derivative_of<ops::structured_mul>([&](Derivative d) { rules.push_back(std::move(d)); });
  REQUIRE(rules.size() == 2);  // mul and mul_
  REQUIRE(rules[0].op == "aten::mul");
  REQUIRE(rules[1].op == "aten::mul_");
  REQUIRE(rules[1].inplace);
  REQUIRE_THROWS_MATCHES(ops::autograd::register_derivative(rules[0]), Error,
                         What(Contains("register_derivative: aten::mul already has a derivative")));
  REQUIRE_THROWS_MATCHES(ops::autograd::register_derivative(rules[1]), Error,
                         What(Contains("register_derivative: aten::mul_ already has a derivative")));
  // the first rule stays: mul still differentiates (d(x * x)/dx = 2x)
  Tensor x = ones({2}).requires_grad_();
  mul(x, x).sum().backward();
  CHECK(x.grad().to_vector() == std::vector<double>{2, 2});

  Derivative unnamed = ops::structured_mul::derivative();
  REQUIRE_THROWS_MATCHES(ops::autograd::register_derivative(unnamed), Error,
                         What(Contains("register_derivative: a rule without an op name (saving 2 tensors)")));
}
