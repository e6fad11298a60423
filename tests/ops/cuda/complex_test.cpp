// Tests the complex ops on CUDA (ops/cuda/pointwise.cpp's mul, ops/cuda/complex.cpp's conj_physical,
// the copies of ops/cuda/cuda_utils.cpp; kernels/cuda/complex.cu) against the CPU: the rotary
// embeddings' product broadcast over a table, its backward, host <-> device moves, strided copies.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {
Tensor host(const Tensor& t) { return t.to(Device(kCPU)); }
}  // namespace

TEST_CASE("complex mul, conj_physical and copies on CUDA equal the CPU's bitwise", "[complex][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType real : {kFloat, kDouble}) {
    INFO(toString(real));
    // odd sizes: no vector width divides them
    Tensor a = view_as_complex(random_cpu({3, 37, 5, 2}, real, 1)), b = view_as_complex(random_cpu({1, 37, 1, 2}, real, 2));
    Tensor ga = a.to(cuda0()), gb = b.to(cuda0());
    CHECK(ga.dtype() == toComplexType(real));
    CHECK(equal(view_as_real(host(ga)), view_as_real(a)));  // the move, both ways
    CHECK(equal(view_as_real(host(mul(ga, gb))), view_as_real(mul(a, b))));
    CHECK(equal(view_as_real(host(conj_physical(ga))), view_as_real(conj_physical(a))));
    Tensor t = ga.transpose(0, 2);
    CHECK(equal(view_as_real(host(t.contiguous())), view_as_real(a.transpose(0, 2).contiguous())));
    // the backward: grad * conj(other), through view_as_complex and view_as_real
    Tensor x = random_cpu({3, 37, 5, 2}, real, 3).requires_grad_(true);
    Tensor gx = x.detach().to(cuda0()).requires_grad_(true);
    Tensor go = random_cpu({3, 37, 5, 2}, real, 4);
    view_as_real(mul(view_as_complex(x), b)).backward(go);
    view_as_real(mul(view_as_complex(gx), gb)).backward(go.to(cuda0()));
    CHECK(equal(host(gx.grad()), x.grad()));
  }
  Tensor c = view_as_complex(random_cpu({4, 2}, kFloat, 5)).to(cuda0());
  REQUIRE_THROWS_WITH(sin(c), Contains("aten::sin: not implemented for 'ComplexFloat'"));
}
