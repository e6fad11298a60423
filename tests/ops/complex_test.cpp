// Tests the complex dtypes (engine/core/scalar_type.h) and the ops that take them: view_as_complex
// and view_as_real (ops/view_ops.cpp), mul of complex tensors (ops/pointwise.cpp), conj_physical
// (ops/complex.cpp), the copies (ops/cpu_utils.cpp); their derivatives under gradcheck; Meta; and
// every other op's refusal, naming the op and the dtype (ops/structured.h).
#include <catch2/catch.hpp>

#include <complex>
#include <vector>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::meta_empty;
using remat::testing::seeded_randn;
using TL = std::vector<Tensor>;

namespace {
// the complex values of t (complex), read through view_as_real
std::vector<std::complex<double>> values(const Tensor& t) {
  std::vector<double> r = view_as_real(t.contiguous()).to_vector();
  std::vector<std::complex<double>> out;
  for (size_t i = 0; i < r.size(); i += 2) out.emplace_back(r[i], r[i + 1]);
  return out;
}
}  // namespace

TEST_CASE("complex dtypes mirror c10's: sizes, names, promotion", "[complex]") {
  CHECK(elementSize(kComplexFloat) == 8);
  CHECK(elementSize(kComplexDouble) == 16);
  CHECK(std::string(toString(kComplexFloat)) == "ComplexFloat");
  CHECK(isComplexType(kComplexDouble));
  CHECK_FALSE(isFloatingType(kComplexFloat));
  CHECK(isDifferentiableType(kComplexFloat));
  CHECK(toRealValueType(kComplexDouble) == kDouble);
  CHECK(toComplexType(kFloat) == kComplexFloat);
  CHECK(promoteTypes(kComplexFloat, kBFloat16) == kComplexFloat);
  CHECK(promoteTypes(kComplexFloat, kDouble) == kComplexDouble);
  CHECK(promoteTypes(kLong, kComplexDouble) == kComplexDouble);
}

TEST_CASE("view_as_complex and view_as_real share storage, with PyTorch's geometry", "[complex][views]") {
  Tensor x = seeded_randn({3, 4, 2}, 1, kFloat);
  Tensor c = view_as_complex(x);
  CHECK(c.dtype() == kComplexFloat);
  CHECK(c.sizes() == Shape{3, 4});
  CHECK(c.strides() == Shape{4, 1});
  CHECK(c.is_alias_of(x));
  Tensor r = view_as_real(c);
  CHECK(r.dtype() == kFloat);
  CHECK(r.sizes() == Shape{3, 4, 2});
  CHECK(r.strides() == Shape{8, 2, 1});
  CHECK(equal(r, x));
  // a slice keeps its offset, halved and doubled
  Tensor s = view_as_complex(x.slice(0, 1, 3));
  CHECK(s.storage_offset() == 4);
  CHECK(view_as_real(s).storage_offset() == 8);
  CHECK(view_as_complex(seeded_randn({2, 2}, 2)).dtype() == kComplexDouble);
  // no memory of its own
  const int64_t before = memory_allocated();
  Tensor v = view_as_real(view_as_complex(x));
  CHECK(memory_allocated() == before);
  // Meta: the same views
  Tensor m = view_as_complex(meta_empty({5, 2}));
  CHECK(m.is_meta());
  CHECK(m.sizes() == Shape{5});
}

TEST_CASE("mul of complex tensors: values, broadcasting, conj_physical, copies", "[complex]") {
  Tensor a = view_as_complex(seeded_randn({2, 3, 2}, 3)), b = view_as_complex(seeded_randn({1, 3, 2}, 4));
  Tensor p = mul(a, b);
  CHECK(p.dtype() == kComplexDouble);
  CHECK(p.sizes() == Shape{2, 3});
  auto av = values(a), bv = values(b), pv = values(p);
  for (size_t i = 0; i < pv.size(); ++i) CHECK(std::abs(pv[i] - av[i] * bv[i % 3]) < 1e-15);
  auto cv = values(conj_physical(a));
  for (size_t i = 0; i < cv.size(); ++i) CHECK(cv[i] == std::conj(av[i]));
  CHECK(equal(conj_physical(seeded_randn({3}, 5)), seeded_randn({3}, 5)));  // a real tensor's is a copy
  // copies: clone, a transposed tensor made contiguous, copy_
  Tensor t = a.transpose(0, 1);
  CHECK_FALSE(t.is_contiguous());
  CHECK(values(t.contiguous()) == values(t.clone()));
  Tensor dst = view_as_complex(zeros({2, 3, 2}, kDouble));
  dst.copy_(a);
  CHECK(values(dst) == av);
  // f32: complex64
  Tensor f = mul(view_as_complex(seeded_randn({4, 2}, 6, kFloat)), view_as_complex(seeded_randn({4, 2}, 7, kFloat)));
  CHECK(f.dtype() == kComplexFloat);
  CHECK(f.nbytes() == 32);
  // Meta: shape, dtype, bytes counted as the CPU counts them
  Tensor mc = view_as_complex(meta_empty({4, 3, 2}));
  const int64_t before = memory_allocated(Device{kMeta});
  Tensor mp = mul(mc, view_as_complex(meta_empty({1, 3, 2})));
  CHECK(mp.sizes() == Shape{4, 3});
  CHECK(memory_allocated(Device{kMeta}) - before == 4 * 3 * 8);
}

TEST_CASE("gradcheck: view_as_complex, mul (grad * conj(other)), view_as_real", "[complex][gradcheck]") {
  // the rotary embeddings' chain, on real inputs and outputs: both operands require grad
  auto f = [](const TL& v) {
    return TL{view_as_real(mul(view_as_complex(v[0]), view_as_complex(v[1])))};
  };
  CHECK(autograd::gradcheck(f, {seeded_randn({2, 3, 2}, 8).requires_grad_(true),
                                seeded_randn({2, 3, 2}, 9).requires_grad_(true)}));
  // a broadcast table that does not require grad (freqs_cis)
  Tensor table = view_as_complex(seeded_randn({1, 3, 2}, 10));
  CHECK(autograd::gradcheck([&](const TL& v) { return TL{view_as_real(mul(view_as_complex(v[0]), table))}; },
                            {seeded_randn({4, 3, 2}, 11).requires_grad_(true)}));
  CHECK(autograd::gradcheck([](const TL& v) { return TL{view_as_real(conj_physical(view_as_complex(v[0])))}; },
                            {seeded_randn({3, 2}, 12).requires_grad_(true)}));
}

TEST_CASE("complex errors name the op and the values", "[complex][errors]") {
  Tensor c = view_as_complex(seeded_randn({3, 2}, 13, kFloat));
  REQUIRE_THROWS_WITH(sin(c), Contains("aten::sin: not implemented for 'ComplexFloat'"));
  REQUIRE_THROWS_WITH(add(c, c), Contains("aten::add: not implemented for 'ComplexFloat'"));
  REQUIRE_THROWS_WITH(sum(c), Contains("aten::sum") && Contains("not implemented for 'ComplexFloat'"));
  REQUIRE_THROWS_WITH(mul(c, ones({3})), Contains("aten::mul: complex operands must have one dtype (got ComplexFloat "
                                                  "and Float)"));
  REQUIRE_THROWS_WITH(c.to(kFloat), Contains("aten::_to_copy: not implemented for 'ComplexFloat' to or from 'Float'"));
  REQUIRE_THROWS_WITH(ones({2}).to(kComplexFloat),
                      Contains("aten::_to_copy: not implemented for 'ComplexFloat' to or from 'Float'"));
  // on Meta too, before any shape is inferred
  Tensor mc = view_as_complex(meta_empty({3, 2}));
  REQUIRE_THROWS_WITH(exp(mc), Contains("aten::exp: not implemented for 'ComplexFloat'"));
  REQUIRE_THROWS_WITH(view_as_real(ones({2})), Contains("aten::view_as_real: view_as_real is only supported for "
                                                         "complex tensors (got Float)"));
  REQUIRE_THROWS_WITH(view_as_complex(ones({2, 2}, kBFloat16)),
                      Contains("aten::view_as_complex: view_as_complex is only supported for float and double tensors, "
                               "but got a tensor of scalar type: BFloat16"));
  REQUIRE_THROWS_WITH(view_as_complex(ones({2, 3})),
                      Contains("aten::view_as_complex: Tensor must have a last dimension of size 2 (got shape [2, 3])"));
  REQUIRE_THROWS_WITH(view_as_complex(ones({2, 2}).t()),
                      Contains("aten::view_as_complex: Tensor must have a last dimension with stride 1 (got strides "
                               "[1, 2])"));
  REQUIRE_THROWS_WITH(view_as_complex(ones({3, 2}).slice(0, 0, 3, 1).as_strided({2, 2}, {3, 1}, 0)),
                      Contains("aten::view_as_complex: Tensor must have a stride divisible by 2 for all but last "
                               "dimension (got strides [3, 1])"));
  REQUIRE_THROWS_WITH(view_as_complex(ones({5}).slice(0, 1, 3)),
                      Contains("aten::view_as_complex: Tensor must have a storage_offset divisible by 2 (got 1)"));
  REQUIRE_THROWS_WITH(view_as_complex(ones({}, kDouble)),
                      Contains("aten::view_as_complex: Input tensor must have one or more dimensions"));
  REQUIRE_THROWS_WITH(c.to_vector(), Contains("not implemented for 'ComplexFloat'"));
}
