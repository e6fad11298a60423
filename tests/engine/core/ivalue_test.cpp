// Mirrors aten/src/ATen/test/ivalue_test.cpp.
// Tests engine/core/ivalue.cpp (IValue: boxing, conversions, error messages, str()).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("IValue boxes each kind and reports it", "[ivalue]") {
  Tensor t = zeros({2, 3});
  Generator gen(1);
  struct Case {
    IValue v;
    IValue::Tag tag;
    const char* kind;
  };
  std::vector<Case> cases = {
      {IValue(), IValue::Tag::None, "None"},
      {IValue(t), IValue::Tag::Tensor, "Tensor"},
      {IValue(1.5), IValue::Tag::Double, "float"},
      {IValue(int64_t{7}), IValue::Tag::Int, "int"},
      {IValue(7), IValue::Tag::Int, "int"},
      {IValue(true), IValue::Tag::Bool, "bool"},
      {IValue("abc"), IValue::Tag::String, "str"},
      {IValue(std::string("abc")), IValue::Tag::String, "str"},
      {IValue(Shape{0, 1}), IValue::Tag::IntList, "int[]"},
      {IValue(std::vector<Tensor>{t, t}), IValue::Tag::TensorList, "Tensor[]"},
      {IValue(kHalf), IValue::Tag::ScalarType, "ScalarType"},
      {IValue(Device{kMeta}), IValue::Tag::Device, "Device"},
      {IValue(&gen), IValue::Tag::Generator, "Generator"},
  };
  for (const Case& c : cases) {
    INFO(c.kind);
    REQUIRE(c.v.tag() == c.tag);
    REQUIRE(std::string(c.v.tagKind()) == c.kind);
  }
  REQUIRE(IValue(t).toTensor().is_same(t));
  REQUIRE(IValue(1.5).toDouble() == 1.5);
  REQUIRE(IValue(7).toInt() == 7);
  REQUIRE(IValue(true).toBool());
  REQUIRE(IValue("abc").toStringRef() == "abc");
  REQUIRE(IValue(Shape{0, 1}).toIntVector() == Shape{0, 1});
  REQUIRE(IValue(std::vector<Tensor>{t, t}).toTensorVector().size() == 2);
  REQUIRE(IValue(kHalf).toScalarType() == kHalf);
  REQUIRE(IValue(Device{kMeta}).toDevice() == Device{kMeta});
  REQUIRE(IValue(&gen).toGenerator() == &gen);
}

TEST_CASE("IValue: undefined tensors, null generators and empty optionals box as None", "[ivalue]") {
  REQUIRE(IValue(Tensor()).isNone());
  REQUIRE(IValue(static_cast<Generator*>(nullptr)).isNone());
  REQUIRE(IValue(std::optional<double>()).isNone());
  REQUIRE(IValue(std::optional<double>(2.0)).toDouble() == 2.0);
  REQUIRE(IValue(std::optional<ScalarType>(kLong)).toScalarType() == kLong);
  REQUIRE(IValue().toGenerator() == nullptr);
}

TEST_CASE("IValue::toDouble accepts an int, as a Scalar would; toInt does not accept a float", "[ivalue]") {
  REQUIRE(IValue(3).toDouble() == 3.0);
  REQUIRE_THROWS_WITH(IValue(3.0).toInt(), "IValue: expected int but got float");
}

TEST_CASE("IValue conversions to the wrong kind name both kinds", "[ivalue]") {
  REQUIRE_THROWS_WITH(IValue().toTensor(), "IValue: expected Tensor but got None");
  REQUIRE_THROWS_WITH(IValue(1.0).toTensor(), "IValue: expected Tensor but got float");
  REQUIRE_THROWS_WITH(IValue(true).toDouble(), "IValue: expected float but got bool");
  REQUIRE_THROWS_WITH(IValue(1).toBool(), "IValue: expected bool but got int");
  REQUIRE_THROWS_WITH(IValue(1).toStringRef(), "IValue: expected str but got int");
  REQUIRE_THROWS_WITH(IValue("x").toIntVector(), "IValue: expected int[] but got str");
  REQUIRE_THROWS_WITH(IValue(Shape{1}).toTensorVector(), "IValue: expected Tensor[] but got int[]");
  REQUIRE_THROWS_WITH(IValue(Device{kCPU}).toScalarType(), "IValue: expected ScalarType but got Device");
  REQUIRE_THROWS_WITH(IValue(kFloat).toDevice(), "IValue: expected Device but got ScalarType");
  REQUIRE_THROWS_WITH(IValue(1).toGenerator(), "IValue: expected Generator but got int");
}

TEST_CASE("IValue::str is short and readable", "[ivalue]") {
  Generator gen;
  REQUIRE(IValue().str() == "None");
  REQUIRE(IValue(zeros({2, 3})).str() == "Tensor[2, 3] Float");
  REQUIRE(IValue(zeros({4}, Device{kMeta})).str() == "Tensor[4] Float meta");
  REQUIRE(IValue(1.5).str() == "1.5");
  REQUIRE(IValue(-3).str() == "-3");
  REQUIRE(IValue(true).str() == "True");
  REQUIRE(IValue(false).str() == "False");
  REQUIRE(IValue("none").str() == "\"none\"");
  REQUIRE(IValue(Shape{0, 1}).str() == "[0, 1]");
  REQUIRE(IValue(std::vector<Tensor>{zeros({1}), zeros({1})}).str() == "Tensor[2]");
  REQUIRE(IValue(kBFloat16).str() == "BFloat16");
  REQUIRE(IValue(Device(kCUDA, 1)).str() == "cuda:1");
  REQUIRE(IValue(&gen).str() == "Generator");
}

TEST_CASE("IValue::unsafe_borrow holds a Tensor without a reference; copies and mutable access own one", "[ivalue]") {
  Tensor t = zeros({2});
  REQUIRE(t.use_count() == 1);
  {
    const IValue borrowed = IValue::unsafe_borrow(t);
    REQUIRE(borrowed.isTensor());
    REQUIRE(borrowed.toTensor().is_same(t));
    REQUIRE(t.use_count() == 1);
    IValue copy = borrowed;  // owns
    REQUIRE(t.use_count() == 2);
    IValue moved = IValue::unsafe_borrow(t);
    IValue still_borrowed = std::move(moved);  // a move keeps the borrow
    REQUIRE(t.use_count() == 2);
    Tensor taken = std::move(still_borrowed.toTensor());  // mutable access owned it first
    REQUIRE(t.use_count() == 3);
    REQUIRE(taken.is_same(t));
  }
  REQUIRE(t.use_count() == 1);
  REQUIRE(IValue::unsafe_borrow(Tensor()).isNone());
}

TEST_CASE("IValue copies, moves and reassigns every kind", "[ivalue]") {
  Tensor t = zeros({2});
  std::vector<IValue> values = {IValue(), IValue(t), IValue(1.5), IValue(7), IValue(true), IValue("abc"),
                                IValue(Shape{0, 1}), IValue(std::vector<Tensor>{t}), IValue(kHalf),
                                IValue(Device(kCUDA, 1))};
  std::vector<IValue> copies = values;
  for (size_t i = 0; i < values.size(); ++i) REQUIRE(copies[i].str() == values[i].str());
  // Reassign each to the next kind (destroying the old one), then back by move.
  for (size_t i = 0; i + 1 < copies.size(); ++i) {
    IValue v = copies[i];
    v = copies[i + 1];
    REQUIRE(v.str() == values[i + 1].str());
    v = std::move(copies[i]);
    REQUIRE(v.str() == values[i].str());
  }
  REQUIRE(t.use_count() == 3);  // values' IValue(t) and Tensor[]; the moved-from copy holds none
}
