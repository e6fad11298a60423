// Mirrors aten/src/ATen/core/op_registration/op_registration_test.cpp.
// Tests engine/dispatch/dispatcher.cpp (the op table, find_op, boxed and typed calls, key
// selection, missing kernels, signatures, registration errors).
#include <catch2/catch.hpp>

#include <algorithm>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::values;

namespace {

// out = alpha * self, for contiguous double tensors (a test kernel: raw loops, no dispatcher).
Tensor scale_cpu(const Tensor& self, double alpha) {
  REMAT_CHECK(self.dtype() == kDouble && self.is_contiguous(), "enginetest::scale: test kernel wants contiguous double");
  Tensor out = make_empty(self.sizes(), kDouble, self.device());
  for (int64_t i = 0; i < self.numel(); ++i) out.data_ptr<double>()[i] = alpha * self.data_ptr<double>()[i];
  return out;
}

// A kernel written boxed: pops self, pushes -self.
void boxed_neg(const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Tensor self = stack->back().toTensor();
  stack->pop_back();
  stack->emplace_back(scale_cpu(self, -1.0));
}

Tensor identity_cpu(const Tensor& self) { return self; }

Tensor meta_like(const Tensor& self, double) { return make_empty(self.sizes(), self.dtype(), Device{kMeta}); }

}  // namespace

REMAT_LIBRARY_FRAGMENT(enginetest, m) {
  m.def("scale(Tensor self, float alpha=2.) -> Tensor");
  m.def("boxed_neg(Tensor self) -> Tensor");
  m.def("swap_me(Tensor self, float alpha) -> Tensor");
}
REMAT_LIBRARY_IMPL(enginetest, CPU, m) {
  m.impl("scale", REMAT_FN(scale_cpu));
  m.impl("boxed_neg", KernelFunction::makeFromBoxedLambda(&boxed_neg));
  m.impl("swap_me", REMAT_FN(scale_cpu));
}

TEST_CASE("find_op returns the one handle of an op", "[dispatcher]") {
  OperatorHandle a = find_op("aten::mm"), b = find_op("aten::mm");
  REQUIRE(a == b);
  REQUIRE(a.name() == "aten::mm");
  REQUIRE(a.hasSchema());
  REQUIRE(a != find_op("aten::bmm"));
  REQUIRE(find_op("enginetest::scale").name() == "enginetest::scale");
}

TEST_CASE("find_op on an unknown name names it and lists the closest registered names", "[dispatcher]") {
  REQUIRE_THROWS_WITH(find_op("aten::sinn"),
                      Catch::StartsWith("find_op: no operator named 'aten::sinn' is registered. Closest "
                                        "registered names: aten::sin, "));
  REQUIRE(closest_op_names("aten::sinn").size() == 3);
  REQUIRE(closest_op_names("aten::sinn")[0] == "aten::sin");
  REQUIRE(closest_op_names("aten::transpos", 1) == std::vector<std::string>{"aten::transpose"});
  REQUIRE(closest_op_names("enginetest::scal", 1) == std::vector<std::string>{"enginetest::scale"});
  REQUIRE_FALSE(Dispatcher::singleton().findOp("aten::sinn").has_value());
}

TEST_CASE("registered_ops: every op with a schema, sorted", "[dispatcher]") {
  std::vector<std::string> ops = registered_ops();
  REQUIRE(std::is_sorted(ops.begin(), ops.end()));
  REQUIRE(std::adjacent_find(ops.begin(), ops.end()) == ops.end());
  for (const char* name : {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::neg", "aten::sin", "aten::cos",
                           "aten::exp", "aten::log", "aten::sum", "aten::mm", "aten::relu", "aten::view",
                           "aten::transpose", "aten::clone", "aten::detach", "aten::add_", "aten::mul_",
                           "enginetest::scale", "enginetest::boxed_neg"}) {
    INFO(name);
    REQUIRE(std::binary_search(ops.begin(), ops.end(), std::string(name)));
  }
  for (const std::string& name : ops) REQUIRE(find_op(name).name() == name);
}

TEST_CASE("A boxed call and a typed call give the same result", "[dispatcher]") {
  Generator g(3);
  Tensor a = randn({2, 3}, kDouble, &g), b = randn({3}, kDouble, &g);

  OperatorHandle mul = find_op("aten::mul");
  std::vector<IValue> boxed = mul.call({a, b});
  REQUIRE(boxed.size() == 1);
  Tensor typed = mul.typed<Tensor(const Tensor&, const Tensor&)>().call(a, b);
  REQUIRE(equal(boxed[0].toTensor(), typed));
  REQUIRE(equal(typed, remat::mul(a, b)));

  OperatorHandle sum = find_op("aten::sum");
  Tensor typed_sum = sum.typed<Tensor(const Tensor&, const std::optional<Shape>&, bool)>().call(a, Shape{1}, true);
  REQUIRE(equal(sum.call({a, Shape{1}, true})[0].toTensor(), typed_sum));
  REQUIRE(typed_sum.sizes() == Shape{2, 1});
  // Defaults are filled for a boxed call: sum over everything, no keepdim.
  REQUIRE(sum.call({a})[0].toTensor().item() == Approx(a.sum().item()).epsilon(1e-15));

  OperatorHandle scale = find_op("enginetest::scale");
  REQUIRE(values(scale.call({a})[0].toTensor()) == values(a * 2.0));
  REQUIRE(values(scale.call({a, 0.5})[0].toTensor()) == values(a * 0.5));
  REQUIRE(equal(scale.typed<Tensor(const Tensor&, double)>().call(a, 0.5), scale.call({a, 0.5})[0].toTensor()));

  Stack stack{a, IValue(3.0)};
  scale.callBoxed(&stack);
  REQUIRE(stack.size() == 1);
  REQUIRE(values(stack[0].toTensor()) == values(a * 3.0));
}

TEST_CASE("A typed call reaches a kernel that was registered boxed (through boxing)", "[dispatcher]") {
  Tensor a = from_vector({1, -2, 3}, {3}, kDouble);
  OperatorHandle op = find_op("enginetest::boxed_neg");
  REQUIRE(values(op.typed<Tensor(const Tensor&)>().call(a)) == std::vector<double>{-1, 2, -3});
  REQUIRE(values(op.call({a})[0].toTensor()) == std::vector<double>{-1, 2, -3});
}

TEST_CASE("A missing kernel fails with PyTorch's \"Could not run\" message", "[dispatcher]") {
  Tensor meta = empty({2}, TensorOptions().dtype(kDouble).device(Device{kMeta}));
  const char* expected =
      "Could not run 'enginetest::scale' with arguments from the 'Meta' backend. 'enginetest::scale' is only "
      "available for these backends: [CPU].";
  OperatorHandle op = find_op("enginetest::scale");
  REQUIRE_THROWS_WITH(op.typed<Tensor(const Tensor&, double)>().call(meta, 2.0), expected);
  REQUIRE_THROWS_WITH(op.call({meta}), expected);
  // An aten op with a Meta kernel runs on Meta.
  Tensor m = mm(empty({2, 3}, Device{kMeta}), empty({3, 4}, Device{kMeta}));
  REQUIRE(m.sizes() == Shape{2, 4});
  REQUIRE(m.is_meta());
}

TEST_CASE("typed<> with the wrong C++ signature names the op and the registered signature", "[dispatcher]") {
  REQUIRE_THROWS_WITH(find_op("enginetest::scale").typed<Tensor(const Tensor&)>(),
                      Catch::Contains("on enginetest::scale: the registered kernels have C++ signature"));
  REQUIRE_THROWS_WITH(find_op("aten::mm").typed<Tensor(Tensor, Tensor)>(),
                      Catch::Contains("on aten::mm: the registered kernels have C++ signature"));
  // An op with only boxed kernels has no C++ signature: any typed<> is accepted.
  REQUIRE_NOTHROW(find_op("enginetest::boxed_neg").typed<Tensor(const Tensor&)>());
}

TEST_CASE("Registration errors: duplicate def, mismatched kernel signature, duplicate fallback", "[dispatcher]") {
  Library lib("enginetest", std::nullopt);
  REQUIRE_THROWS_WITH(lib.def("scale(Tensor self, float alpha=2.) -> Tensor"),
                      "Tried to register an operator (enginetest::scale(Tensor self, float alpha=2.) -> Tensor) with "
                      "the same name and overload name multiple times. Each overload's schema should only be "
                      "registered with a single call to def(). Duplicate registration: enginetest::scale");
  REQUIRE_NOTHROW(Dispatcher::singleton().registerImpl("enginetest::scale", DispatchKey::Meta,
                                                       KernelFunction::makeFromUnboxedFunction<&meta_like>()));
  REQUIRE_THROWS_WITH(
      Dispatcher::singleton().registerImpl("enginetest::scale", DispatchKey::CUDA, REMAT_FN(identity_cpu)),
      Catch::Contains("Mismatch in kernel C++ signatures for enginetest::scale"));
  Dispatcher::singleton().deregisterImpl("enginetest::scale", DispatchKey::Meta);
  REQUIRE_THROWS_WITH(
      Dispatcher::singleton().registerFallback(DispatchKey::Python, KernelFunction::makeFallthrough()),
      "Tried to register multiple backend fallbacks for the same dispatch key Python");
}

TEST_CASE("registerImpl and deregisterImpl change which key can run", "[dispatcher]") {
  Tensor meta = empty({2, 2}, TensorOptions().dtype(kDouble).device(Device{kMeta}));
  OperatorHandle op = find_op("enginetest::swap_me");
  auto call = [&] { return op.typed<Tensor(const Tensor&, double)>().call(meta, 1.0); };
  REQUIRE_THROWS_WITH(call(), Catch::Contains("only available for these backends: [CPU]"));
  Dispatcher::singleton().registerImpl("enginetest::swap_me", DispatchKey::Meta, REMAT_FN(meta_like));
  REQUIRE(call().sizes() == Shape{2, 2});
  REQUIRE(op.entry()->hasKernelForKey(DispatchKey::Meta));
  Dispatcher::singleton().deregisterImpl("enginetest::swap_me", DispatchKey::Meta);
  REQUIRE_FALSE(op.entry()->hasKernelForKey(DispatchKey::Meta));
  REQUIRE_THROWS_WITH(call(), Catch::Contains("only available for these backends: [CPU]"));
}

TEST_CASE("The key set of a call: the tensors' keys, plus included, minus excluded", "[dispatcher]") {
  Tensor x = ones({2}, TensorOptions().dtype(kDouble).requires_grad(true));
  REQUIRE(x.impl()->key_set().has(DispatchKey::Autograd));
  REQUIRE(sin(x).grad_fn() != nullptr);  // Autograd is the highest key: the graph is recorded
  // A Tensor[] argument contributes its elements' keys.
  Tensor c = cat({ones({2}, kDouble), x});
  REQUIRE(c.grad_fn() != nullptr);
  REQUIRE(c.grad_fn()->name() == "CatBackward0");
  // Explicit redispatch below Autograd skips it.
  Stack stack{x};
  find_op("aten::sin").redispatchBoxed(DispatchKeySet(DispatchKey::CPU), &stack);
  REQUIRE(stack[0].toTensor().grad_fn() == nullptr);
  REQUIRE(equal(stack[0].toTensor(), sin(x.detach())));
  REQUIRE(detail::keys_of_stack(Stack{x, IValue(1.0), IValue(std::vector<Tensor>{empty({1}, Device{kMeta})})}, 3) ==
          DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Autograd).add(DispatchKey::Meta));
}
