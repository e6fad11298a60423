// Mirrors aten/src/ATen/core/boxing/KernelFunction_test.cpp.
// Tests engine/dispatch/kernel_function.h (unboxed/boxed entry points, fallthrough kernels,
// WrapperKernel around the keys below it) through small test ops.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::CountingMode;
using remat::testing::values;

namespace {

int g_plain_calls = 0;
Tensor plus_one_cpu(const Tensor& self, double) {
  ++g_plain_calls;
  Tensor out = make_empty(self.sizes(), kDouble, self.device());
  for (int64_t i = 0; i < self.numel(); ++i) out.data_ptr<double>()[i] = self.data_ptr<double>()[i] + 1.0;
  return out;
}

// The dispatch key set a kernel that takes one is called with.
DispatchKeySet g_seen_keys;
Tensor keys_cpu(DispatchKeySet ks, const Tensor& self) {
  g_seen_keys = ks;
  return self;
}

// Records what it sees before and after the keys below it run.
struct RecordingWrapper : WrapperKernel {
  RecordingWrapper() : WrapperKernel(DispatchKey::Autocast) {}
  mutable std::vector<std::string> log;
  bool before(const OperatorHandle& op, const IValue* args, size_t n, std::shared_ptr<void>* state) const override {
    log.push_back("before " + op.name() + " n=" + std::to_string(n) + " alpha=" + args[1].str());
    *state = std::make_shared<int>(42);
    return true;
  }
  void after(const OperatorHandle&, const std::shared_ptr<void>& state, const IValue* rets, size_t n) const override {
    log.push_back("after n=" + std::to_string(n) + " state=" + std::to_string(*static_cast<int*>(state.get())) +
                  " ret=" + rets[0].str());
  }
};

// A plain boxed function (KernelFunction::makeFromBoxedFunction): returns its argument.
int g_boxed_fn_calls = 0;
void boxed_identity(const OperatorHandle&, DispatchKeySet, Stack* stack) { ++g_boxed_fn_calls; (void)stack; }

}  // namespace

REMAT_LIBRARY_FRAGMENT(kftest, m) {
  m.def("boxed_identity(Tensor self) -> Tensor");
  m.def("plus_one(Tensor self, float unused=0.) -> Tensor");
  m.def("skipped(Tensor self, float unused=0.) -> Tensor");
  m.def("keys(Tensor self) -> Tensor");
}
REMAT_LIBRARY_IMPL(kftest, CPU, m) {
  m.impl("plus_one", REMAT_FN(plus_one_cpu));
  m.impl("skipped", REMAT_FN(plus_one_cpu));
  m.impl("keys", REMAT_FN(keys_cpu));
  m.impl("boxed_identity", KernelFunction::makeFromBoxedFunction<&boxed_identity>());
}
// A fallthrough at Python: dispatch modes never see kftest::skipped.
REMAT_LIBRARY_IMPL(kftest, Python, m) { m.impl("skipped", KernelFunction::makeFallthrough()); }

TEST_CASE("KernelFunction kinds", "[kernel_function]") {
  KernelFunction none;
  REQUIRE_FALSE(none.isValid());
  KernelFunction f = KernelFunction::makeFallthrough();
  REQUIRE(f.isFallthrough());
  KernelFunction u = REMAT_FN(plus_one_cpu);
  REQUIRE(u.isValid());
  REQUIRE_FALSE(u.isFallthrough());
  REQUIRE(*u.cppSignature() == typeid(Tensor(const Tensor&, double)));
  // A kernel taking a leading DispatchKeySet has the op's signature without it.
  REQUIRE(*REMAT_FN(keys_cpu).cppSignature() == typeid(Tensor(const Tensor&)));
  REQUIRE(KernelFunction::makeFromBoxedLambda([](const OperatorHandle&, DispatchKeySet, Stack*) {}).cppSignature() ==
          nullptr);
}

TEST_CASE("A plain boxed function runs through both entry points", "[kernel_function]") {
  KernelFunction k = KernelFunction::makeFromBoxedFunction<&boxed_identity>();
  REQUIRE(k.isValid());
  REQUIRE_FALSE(k.isFallthrough());
  REQUIRE(k.cppSignature() == nullptr);
  Tensor x = ones({2}, kDouble);
  g_boxed_fn_calls = 0;
  std::vector<IValue> rets = find_op("kftest::boxed_identity").call({x});
  REQUIRE(rets.size() == 1);
  REQUIRE(rets[0].toTensor().is_same(x));
  // Typed: the dispatcher boxes the arguments for it and unboxes the return.
  Tensor y = find_op("kftest::boxed_identity").typed<Tensor(const Tensor&)>().call(x);
  REQUIRE(y.is_same(x));
  REQUIRE(g_boxed_fn_calls == 2);
}

TEST_CASE("A kernel that asks for it gets the call's key set", "[kernel_function]") {
  Tensor x = ones({1}, kDouble);
  find_op("kftest::keys").typed<Tensor(const Tensor&)>().call(x);
  REQUIRE(g_seen_keys.has(DispatchKey::CPU));
  g_seen_keys = DispatchKeySet();
  find_op("kftest::keys").call({x});
  REQUIRE(g_seen_keys.has(DispatchKey::CPU));
}

TEST_CASE("A fallthrough kernel skips its key: modes do not see the op", "[kernel_function]") {
  auto mode = std::make_shared<CountingMode>();
  Tensor x = zeros({2}, kDouble);
  {
    DispatchModeGuard g(mode);
    find_op("kftest::skipped").call({x});
    find_op("kftest::plus_one").call({x});
  }
  REQUIRE(mode->calls == std::vector<std::string>{"kftest::plus_one"});
}

TEST_CASE("A WrapperKernel runs before and after the keys below it, typed and boxed", "[kernel_function]") {
  auto wrapper = std::make_shared<RecordingWrapper>();
  Dispatcher::singleton().registerImpl("kftest::plus_one", DispatchKey::Autocast,
                                       KernelFunction::makeFromWrapper(wrapper));
  Tensor x = zeros({2}, kDouble);
  auto typed = find_op("kftest::plus_one").typed<Tensor(const Tensor&, double)>();
  g_plain_calls = 0;

  typed.call(x, 0.5);  // Autocast is not in the key set: the wrapper does not run
  REQUIRE(wrapper->log.empty());
  {
    IncludeDispatchKeyGuard autocast(DispatchKey::Autocast);
    Tensor y = typed.call(x, 0.5);  // the unboxed trampoline
    REQUIRE(values(y) == std::vector<double>{1, 1});
    Tensor z = find_op("kftest::plus_one").call({x, 0.25})[0].toTensor();  // the boxed entry point
    REQUIRE(values(z) == std::vector<double>{1, 1});
  }
  REQUIRE(g_plain_calls == 3);
  REQUIRE(wrapper->log == std::vector<std::string>{
                              "before kftest::plus_one n=2 alpha=0.5", "after n=1 state=42 ret=Tensor[2] Double",
                              "before kftest::plus_one n=2 alpha=0.25", "after n=1 state=42 ret=Tensor[2] Double"});
  Dispatcher::singleton().deregisterImpl("kftest::plus_one", DispatchKey::Autocast);
}
