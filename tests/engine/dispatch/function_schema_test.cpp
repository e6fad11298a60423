// Mirrors test/test_function_schema.py.
// Tests engine/dispatch/function_schema.cpp (parsing, str() round trip, defaults, alias
// annotations, mutability, tags, and the checks of a boxed call's arguments).
#include <catch2/catch.hpp>

#include <limits>

#include "remat.h"

using namespace remat;

TEST_CASE("parse_schema reads names, types, defaults, alias annotations and kwarg-only markers", "[schema]") {
  FunctionSchema s = parse_schema(
      "ns::f.overload(Tensor(a!) self, Tensor? w, int[] size, float eps=1e-05, *, bool flag=False, "
      "str mode='none', Generator? generator=None) -> (Tensor(a!), Tensor)");
  REQUIRE(s.name() == "ns::f.overload");
  const auto& a = s.arguments();
  REQUIRE(a.size() == 7);
  REQUIRE(a[0].name == "self");
  REQUIRE(a[0].type == "Tensor");
  REQUIRE(a[0].is_tensor());
  REQUIRE(a[0].alias_info.has_value());
  REQUIRE(a[0].alias_info->set == "a");
  REQUIRE(a[0].alias_info->is_write);
  REQUIRE(a[0].is_mutable());
  REQUIRE(a[1].type == "Tensor?");
  REQUIRE(a[1].is_optional());
  REQUIRE(a[1].is_tensor());
  REQUIRE_FALSE(a[1].default_value.has_value());
  REQUIRE(a[2].type == "int[]");
  REQUIRE_FALSE(a[2].is_tensor());
  REQUIRE(a[3].default_value->toDouble() == 1e-05);
  REQUIRE_FALSE(a[3].kwarg_only);
  REQUIRE(a[4].kwarg_only);
  REQUIRE(a[4].default_value->isBool());
  REQUIRE_FALSE(a[4].default_value->toBool());
  REQUIRE(a[5].default_value->toStringRef() == "none");
  REQUIRE(a[6].type == "Generator?");
  REQUIRE(a[6].default_value->isNone());
  REQUIRE(s.returns().size() == 2);
  REQUIRE(s.returns()[0].alias_info->set == "a");
  REQUIRE(s.is_mutable());
  REQUIRE(s.is_aliasing_return(0));
  REQUIRE_FALSE(s.is_aliasing_return(1));
  REQUIRE_FALSE(s.is_aliasing_return(2));
}

TEST_CASE("Schemas of registered ops print as they were defined", "[schema]") {
  REQUIRE(find_op("aten::add_").schema().str() == "aten::add_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  REQUIRE(find_op("aten::mm").schema().str() == "aten::mm(Tensor self, Tensor mat2) -> Tensor");
  REQUIRE(find_op("aten::sum").schema().str() == "aten::sum(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor");
  REQUIRE(find_op("aten::view").schema().str() == "aten::view(Tensor(a) self, int[] size) -> Tensor(a)");
  REQUIRE(find_op("aten::slice").schema().str() ==
          "aten::slice(Tensor(a) self, int dim=0, int start=0, int end=9223372036854775807, int step=1) -> Tensor(a)");
  REQUIRE(find_op("aten::uniform_").schema().str() ==
          "aten::uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)");
  REQUIRE(find_op("aten::layer_norm").schema().str() ==
          "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
          "float eps=1e-05) -> Tensor");
  REQUIRE(find_op("aten::gelu").schema().str() == "aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor");
  REQUIRE(find_op("aten::native_dropout").schema().str() ==
          "aten::native_dropout(Tensor input, float p, *, Generator? generator=None) -> (Tensor, Tensor)");
  std::ostringstream os;
  os << find_op("aten::mm").schema();
  REQUIRE(os.str() == "aten::mm(Tensor self, Tensor mat2) -> Tensor");
}

TEST_CASE("Every registered schema round-trips through str() and parse_schema", "[schema]") {
  for (const std::string& name : registered_ops()) {
    const FunctionSchema& s = find_op(name).schema();
    INFO(s.str());
    FunctionSchema again = parse_schema(s.str());
    REQUIRE(again.str() == s.str());
    REQUIRE(again.name() == s.name());
    REQUIRE(again.arguments().size() == s.arguments().size());
    REQUIRE(again.returns().size() == s.returns().size());
    for (size_t i = 0; i < s.arguments().size(); ++i) {
      const Argument &x = s.arguments()[i], &y = again.arguments()[i];
      REQUIRE(x.name == y.name);
      REQUIRE(x.type == y.type);
      REQUIRE(x.kwarg_only == y.kwarg_only);
      REQUIRE(x.is_mutable() == y.is_mutable());
      REQUIRE(x.default_value.has_value() == y.default_value.has_value());
      if (x.default_value) REQUIRE(x.default_value->str() == y.default_value->str());
    }
  }
}

TEST_CASE("A schema's str() keeps default floats exactly", "[schema]") {
  FunctionSchema s =
      parse_schema("ns::g(Tensor self, float a=0.1234567890123456, float b=0., float c=-2, float d=1e-05) -> Tensor");
  REQUIRE(s.str() == "ns::g(Tensor self, float a=0.1234567890123456, float b=0., float c=-2., float d=1e-05) -> Tensor");
  FunctionSchema again = parse_schema(s.str());
  REQUIRE(again.arguments()[1].default_value->toDouble() == 0.1234567890123456);
  REQUIRE(again.arguments()[2].default_value->toDouble() == 0.0);
  REQUIRE(again.arguments()[3].default_value->toDouble() == -2.0);
  REQUIRE(again.arguments()[4].default_value->toDouble() == 1e-05);
}

TEST_CASE("Alias annotations on lists and optionals print where the parser reads them", "[schema]") {
  FunctionSchema s = parse_schema("ns::unbind(Tensor(a) self, int dim=0) -> Tensor(a)[]");
  REQUIRE(s.returns()[0].type == "Tensor[]");
  REQUIRE(s.returns()[0].alias_info->set == "a");
  REQUIRE(s.str() == "ns::unbind(Tensor(a) self, int dim=0) -> Tensor(a)[]");
  REQUIRE(parse_schema(s.str()).str() == s.str());
  FunctionSchema o = parse_schema("ns::maybe(Tensor(b!)? out) -> ()");
  REQUIRE(o.arguments()[0].type == "Tensor?");
  REQUIRE(o.arguments()[0].is_mutable());
  REQUIRE(o.returns().empty());
  REQUIRE(o.str() == "ns::maybe(Tensor(b!)? out) -> ()");
  REQUIRE(parse_schema(o.str()).str() == o.str());
}

TEST_CASE("Mutability and aliasing of registered ops", "[schema]") {
  REQUIRE(find_op("aten::add_").schema().is_mutable());
  REQUIRE(find_op("aten::uniform_").schema().is_mutable());
  REQUIRE_FALSE(find_op("aten::add").schema().is_mutable());
  REQUIRE_FALSE(find_op("aten::view").schema().is_mutable());
  REQUIRE(find_op("aten::view").schema().is_aliasing_return(0));
  REQUIRE(find_op("aten::transpose").schema().is_aliasing_return(0));
  REQUIRE(find_op("aten::add_").schema().is_aliasing_return(0));
  REQUIRE_FALSE(find_op("aten::mm").schema().is_aliasing_return(0));
  REQUIRE_FALSE(find_op("aten::clone").schema().is_aliasing_return(0));
}

TEST_CASE("Tags: random ops are nondeterministic_seeded, pointwise ops are pointwise", "[schema]") {
  REQUIRE(std::string(toString(Tag::nondeterministic_seeded)) == "nondeterministic_seeded");
  for (const char* name : {"aten::native_dropout", "aten::uniform_", "aten::normal_"}) {
    INFO(name);
    REQUIRE(find_op(name).has_tag(Tag::nondeterministic_seeded));
  }
  for (const char* name : {"aten::mm", "aten::add", "aten::dropout", "aten::clone"}) {
    INFO(name);
    REQUIRE_FALSE(find_op(name).has_tag(Tag::nondeterministic_seeded));
  }
  REQUIRE(find_op("aten::sin").has_tag(Tag::pointwise));
  REQUIRE(find_op("aten::add").schema().has_tag(Tag::pointwise));
  REQUIRE_FALSE(find_op("aten::mm").has_tag(Tag::pointwise));
}

TEST_CASE("parse_schema errors name the problem, the position and the schema", "[schema]") {
  REQUIRE_THROWS_WITH(parse_schema("aten::f(Tensr x) -> Tensor"),
                      "parse_schema: unknown type 'Tensr' at position 13 in \"aten::f(Tensr x) -> Tensor\"");
  REQUIRE_THROWS_WITH(parse_schema("aten::f -> Tensor"),
                      "parse_schema: expected '(' at position 8 in \"aten::f -> Tensor\"");
  REQUIRE_THROWS_WITH(parse_schema("aten::f(float[] x) -> Tensor"),
                      Catch::Contains("parse_schema: unsupported type 'float[]'"));
  REQUIRE_THROWS_WITH(parse_schema("aten::f(int x=abc) -> Tensor"),
                      Catch::Contains("parse_schema: bad default value 'abc' for type int"));
  REQUIRE_THROWS_WITH(parse_schema("aten::f(str x='abc) -> Tensor"),
                      Catch::Contains("parse_schema: unterminated string default"));
  REQUIRE_THROWS_WITH(parse_schema("aten::f(Tensor x) -> Tensor y z"),
                      Catch::Contains("parse_schema: unexpected trailing characters at position"));
  REQUIRE_THROWS_WITH(parse_schema("aten::f(Tensor x) Tensor"), Catch::Contains("expected '-'"));
}

TEST_CASE("check_and_normalize fills defaults and checks arity and types", "[schema]") {
  const FunctionSchema& sum = find_op("aten::sum").schema();
  Stack args{IValue(zeros({2}))};
  sum.check_and_normalize(args);
  REQUIRE(args.size() == 3);
  REQUIRE(args[1].isNone());
  REQUIRE(args[2].isBool());
  REQUIRE_FALSE(args[2].toBool());

  const FunctionSchema& mm = find_op("aten::mm").schema();
  Stack missing{IValue(zeros({2, 2}))};
  REQUIRE_THROWS_WITH(mm.check_and_normalize(missing),
                      "aten::mm() is missing value for argument 'mat2'. Schema: aten::mm(Tensor self, Tensor mat2) -> Tensor");
  Stack too_many{IValue(zeros({2, 2})), IValue(zeros({2, 2})), IValue(1)};
  REQUIRE_THROWS_WITH(mm.check_and_normalize(too_many),
                      "aten::mm() takes at most 2 arguments but 3 were given. Schema: aten::mm(Tensor self, Tensor mat2) -> Tensor");
  Stack wrong{IValue(zeros({2, 2})), IValue(1.5)};
  REQUIRE_THROWS_WITH(mm.check_and_normalize(wrong),
                      "aten::mm(): expected argument 'mat2' (position 1) to be of type Tensor but got float. "
                      "Schema: aten::mm(Tensor self, Tensor mat2) -> Tensor");

  // An int is accepted for a float (as a Scalar); an undefined Tensor (None) for a Tensor.
  const FunctionSchema& mul = find_op("aten::mul.Scalar").schema();
  Stack scalar_int{IValue(zeros({2})), IValue(3)};
  mul.check_and_normalize(scalar_int);
  Stack none_tensor{IValue(), IValue(zeros({2}))};
  find_op("aten::add").schema().check_and_normalize(none_tensor);
  // A bool is not an int, a float is not an int.
  const FunctionSchema& triu = find_op("aten::triu").schema();
  Stack b{IValue(zeros({2, 2})), IValue(true)};
  REQUIRE_THROWS_WITH(triu.check_and_normalize(b), Catch::Contains("to be of type int but got bool"));
  Stack f{IValue(zeros({2, 2})), IValue(1.0)};
  REQUIRE_THROWS_WITH(triu.check_and_normalize(f), Catch::Contains("to be of type int but got float"));
}
