// Tests of ops/custom_op.cpp: custom_op, register_fake, register_autograd, as_custom_op (the
// seed's Function-to-op wrapper), and how selective checkpointing treats them.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/op_counter.h"

using namespace remat;
using remat::testing::CountOps;

namespace {

int g_my_mul_runs = 0;

// forward: out = a * b
CustomOp& my_mul() {
  static CustomOp& op = [] () -> CustomOp& {
    CustomOp& o = custom_op("remat_test::my_mul", [](const std::vector<Tensor>& in) {
      ++g_my_mul_runs;
      return std::vector<Tensor>{in[0] * in[1]};
    });
    o.register_fake([](const std::vector<Tensor>& in) { return std::vector<Tensor>{empty_like(in[0])}; })
        .register_autograd(
            [](autograd::AutogradContext* ctx, const std::vector<Tensor>& grads) {
              std::vector<Tensor> s = ctx->get_saved_variables();
              return std::vector<Tensor>{grads[0] * s[1], grads[0] * s[0]};
            },
            [](autograd::AutogradContext* ctx, const std::vector<Tensor>& in, const std::vector<Tensor>&) {
              ctx->save_for_backward(in);
            });
    return o;
  }();
  return op;
}

// A legacy Function: forward saves x and its own intermediate sin(x).
struct SinTimesX : autograd::Function<SinTimesX> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, const std::vector<Tensor>& in) {
    Tensor s = in[0].sin();
    ctx->save_for_backward({in[0], s});
    ctx->saved_data["scale"] = 1.0;
    return {s * in[0]};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
    // forward: y = sin(x) * x; dy/dx = cos(x) * x + sin(x)
    std::vector<Tensor> saved = ctx->get_saved_variables();
    double scale = ctx->saved_data.at("scale").toDouble();
    return {grads[0] * (saved[0].cos() * saved[0] + saved[1]) * scale};
  }
};

}  // namespace

TEST_CASE("a custom op is one dispatcher op with its own autograd", "[custom_op]") {
  Tensor a = randn({3}, kDouble).requires_grad_();
  Tensor b = randn({3}, kDouble).requires_grad_();
  {
    CountOps ops;
    Tensor y = my_mul()({a, b})[0];
    REQUIRE(ops.counter->count("remat_test::my_mul") == 1);
    REQUIRE(ops.counter->count("aten::mul") == 0);  // opaque: its insides are not seen
    REQUIRE(y.grad_fn()->name() == "MyMulBackward0");
  }
  REQUIRE(autograd::gradcheck([](const std::vector<Tensor>& in) { return my_mul()(in); }, {a, b}));
  REQUIRE(find_op("remat_test::my_mul").schema().str() == "remat_test::my_mul(Tensor[] inputs) -> Tensor[]");
}

TEST_CASE("register_fake runs on the Meta device", "[custom_op]") {
  Tensor a = empty({2, 5}, Device(kMeta)), b = empty({2, 5}, Device(kMeta));
  int64_t before = memory_allocated();
  Tensor y = my_mul()({a, b})[0];
  REQUIRE(y.is_meta());
  REQUIRE(y.sizes() == Shape{2, 5});
  REQUIRE(memory_allocated() == before);
}

TEST_CASE("custom op errors", "[custom_op]") {
  REQUIRE_THROWS_WITH(custom_op("no_namespace", [](const std::vector<Tensor>& in) { return in; }),
                      Catch::Contains("must be qualified as 'namespace::name'"));
  REQUIRE_THROWS_WITH(custom_op("aten::mine", [](const std::vector<Tensor>& in) { return in; }),
                      Catch::Contains("the 'aten' namespace is reserved"));
  my_mul();
  REQUIRE_THROWS_WITH(custom_op("remat_test::my_mul", [](const std::vector<Tensor>& in) { return in; }),
                      Catch::Contains("remat_test::my_mul is already defined"));
  static CustomOp& no_fake = custom_op("remat_test::no_fake", [](const std::vector<Tensor>& in) { return in; });
  REQUIRE_THROWS_WITH(no_fake({empty({2}, Device(kMeta))}), Catch::Contains("has no fake implementation"));
  static CustomOp& no_grad_rule = custom_op("remat_test::no_autograd", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * 2.0};
  });
  Tensor x = randn({2}).requires_grad_();
  Tensor y = no_grad_rule({x})[0];
  REQUIRE_THROWS_WITH(y.sum().backward(),
                      Catch::Contains("the derivative for 'remat_test::no_autograd' is not implemented"));
}

TEST_CASE("a custom op in the SAC save list runs exactly once across forward and backward", "[custom_op][sac]") {
  Tensor a = randn({4}).requires_grad_();
  Tensor b = randn({4}).requires_grad_();
  g_my_mul_runs = 0;
  CheckpointOptions o;
  o.context_fn = [] { return create_selective_checkpoint_contexts({"remat_test::my_mul"}); };
  Tensor loss = checkpoint([&](const Tensor& x) { return my_mul()({x.sin(), b})[0].cos().sum(); }, a, o);
  loss.backward();
  REQUIRE(g_my_mul_runs == 1);
  REQUIRE(allclose(b.grad(), a.detach().sin() * -(a.detach().sin() * b.detach()).sin()));

  // Not in the save list: it runs again in the recomputation.
  g_my_mul_runs = 0;
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  CheckpointOptions vanilla;
  vanilla.early_stop = false;
  checkpoint([&](const Tensor& x) { return my_mul()({x.sin(), b})[0].cos().sum(); }, a, vanilla).backward();
  REQUIRE(g_my_mul_runs == 2);
}

TEST_CASE("as_custom_op: a legacy Function as one op, each saved tensor packed once", "[custom_op]") {
  static CustomOp& wrapped = as_custom_op<SinTimesX>("remat_test::sin_times_x");
  Tensor x = randn({5}, kDouble).requires_grad_();
  int packs = 0, unpacks = 0;
  Tensor y;
  {
    autograd::saved_tensors_hooks count(
        [&](const Tensor& t) -> std::any {
          ++packs;
          return t;
        },
        [&](const std::any& p) {
          ++unpacks;
          return std::any_cast<Tensor>(p);
        });
    CountOps ops;
    y = wrapped({x})[0];
    REQUIRE(ops.counter->count("remat_test::sin_times_x") == 1);
    REQUIRE(ops.counter->count("aten::sin") == 0);
  }
  REQUIRE(packs == 2);  // x and sin(x), once each (no second pack/unpack round trip)
  y.sum().backward();
  REQUIRE(unpacks == 2);
  Tensor xd = x.detach();
  REQUIRE(allclose(x.grad(), xd.cos() * xd + xd.sin(), 1e-12, 1e-12));
  // The wrapped op returns the Function's saved tensors as extra outputs.
  REQUIRE(wrapped({x}).size() == 3);
  REQUIRE(autograd::gradcheck([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{wrapped(in)[0]};
  }, {x}));
}
