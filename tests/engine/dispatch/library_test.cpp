// Mirrors test/test_python_dispatch.py (torch.library tests).
// Tests engine/dispatch/library.cpp (Library: def, impl, fallback, name qualification).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

namespace {
Tensor first_cpu(const Tensor& a, const Tensor&) { return a; }
}  // namespace

// Two fragments of one namespace, and an op defined with an explicit namespace.
REMAT_LIBRARY_FRAGMENT(libtest, m) { m.def("first(Tensor a, Tensor b) -> Tensor", {Tag::core}); }
REMAT_LIBRARY_FRAGMENT(libtest, m) { m.def("other_ns::second(Tensor a) -> Tensor"); }
REMAT_LIBRARY_IMPL(libtest, CPU, m) { m.impl("first", REMAT_FN(first_cpu)); }

TEST_CASE("Library qualifies names with its namespace unless they have one", "[library]") {
  Library lib("libtest", DispatchKey::CPU);
  REQUIRE(lib.qualify("first") == "libtest::first");
  REQUIRE(lib.qualify("aten::mm") == "aten::mm");
  REQUIRE(find_op("libtest::first").schema().str() == "libtest::first(Tensor a, Tensor b) -> Tensor");
  REQUIRE(find_op("other_ns::second").hasSchema());
  REQUIRE_THROWS_WITH(find_op("libtest::second"), Catch::Contains("no operator named 'libtest::second'"));
}

TEST_CASE("Library::def records tags; impl registers for the library's key", "[library]") {
  REQUIRE(find_op("libtest::first").has_tag(Tag::core));
  REQUIRE_FALSE(find_op("libtest::first").has_tag(Tag::pointwise));
  REQUIRE(find_op("libtest::first").entry()->hasKernelForKey(DispatchKey::CPU));
  REQUIRE_FALSE(find_op("libtest::first").entry()->hasKernelForKey(DispatchKey::Meta));
  Tensor a = ones({2}), b = zeros({2});
  REQUIRE(find_op("libtest::first").call({a, b})[0].toTensor().is_same(a));
}

TEST_CASE("A library without a dispatch key cannot impl or fallback without naming one", "[library]") {
  Library lib("libtest", std::nullopt);
  REQUIRE_THROWS_WITH(lib.impl("first", REMAT_FN(first_cpu)),
                      "Library::impl(first): this library has no dispatch key; pass one");
  REQUIRE_THROWS_WITH(lib.fallback(KernelFunction::makeFallthrough()),
                      "Library::fallback: this library has no dispatch key");
  lib.impl("first", DispatchKey::Meta, REMAT_FN(first_cpu));  // an explicit key is fine
  REQUIRE(find_op("libtest::first").entry()->hasKernelForKey(DispatchKey::Meta));
  Dispatcher::singleton().deregisterImpl("libtest::first", DispatchKey::Meta);
}

TEST_CASE("Library::def rejects a malformed schema with the parser's message", "[library]") {
  Library lib("libtest", std::nullopt);
  REQUIRE_THROWS_WITH(lib.def("bad(Tensr a) -> Tensor"),
                      Catch::Contains("parse_schema: unknown type 'Tensr'") && Catch::Contains("libtest::bad"));
  REQUIRE_FALSE(Dispatcher::singleton().findOp("libtest::bad").has_value());
}
