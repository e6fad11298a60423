// Mirrors ATen/core/ivalue.h (IValue) and ATen/core/stack.h (Stack): the boxed values a boxed
// kernel, a dispatch mode or a custom op sees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/scalar_type.h"
#include "engine/core/tensor.h"

namespace remat {

class Generator;

class IValue {
 public:
  enum class Tag { None, Tensor, Double, Int, Bool, String, IntList, TensorList, ScalarType, Device, Generator };

  IValue() = default;
  IValue(Tensor t) {  // NOLINT: implicit, as in PyTorch; an undefined Tensor boxes as None
    if (t.defined()) v_ = std::move(t);
  }
  IValue(double d) : v_(d) {}                 // NOLINT
  IValue(int64_t i) : v_(i) {}                // NOLINT
  IValue(int i) : v_(int64_t{i}) {}           // NOLINT
  IValue(bool b) : v_(b) {}                   // NOLINT
  IValue(std::string s) : v_(std::move(s)) {} // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}  // NOLINT
  IValue(Shape l) : v_(std::move(l)) {}       // NOLINT
  IValue(std::vector<Tensor> l) : v_(std::move(l)) {}  // NOLINT
  IValue(ScalarType t) : v_(t) {}             // NOLINT
  IValue(Device d) : v_(d) {}                 // NOLINT
  IValue(Generator* g) {                      // NOLINT: non-owning; nullptr boxes as None
    if (g) v_ = g;
  }
  template <class T>
  IValue(std::optional<T> o) {  // NOLINT
    if (o) *this = IValue(std::move(*o));
  }

  Tag tag() const { return static_cast<Tag>(v_.index()); }
  const char* tagKind() const;

  bool isNone() const { return tag() == Tag::None; }
  bool isTensor() const { return tag() == Tag::Tensor; }
  bool isDouble() const { return tag() == Tag::Double; }
  bool isInt() const { return tag() == Tag::Int; }
  bool isBool() const { return tag() == Tag::Bool; }
  bool isString() const { return tag() == Tag::String; }
  bool isIntList() const { return tag() == Tag::IntList; }
  bool isTensorList() const { return tag() == Tag::TensorList; }
  bool isScalarType() const { return tag() == Tag::ScalarType; }
  bool isDevice() const { return tag() == Tag::Device; }
  bool isGenerator() const { return tag() == Tag::Generator; }

  // Throws unless a Tensor. Inline: every boxed kernel and the dispatcher's key computation
  // unbox through it, and the checked std::get would cost a second tag test and a call.
  const Tensor& toTensor() const {
    if (__builtin_expect(!isTensor(), 0)) throwNotTensor();
    return *std::get_if<Tensor>(&v_);
  }
  Tensor& toTensor() {
    if (__builtin_expect(!isTensor(), 0)) throwNotTensor();
    return *std::get_if<Tensor>(&v_);
  }
  double toDouble() const;         // accepts an int too, as a Scalar would
  int64_t toInt() const;
  bool toBool() const;
  const std::string& toStringRef() const;
  Shape toIntVector() const;
  const Shape& toIntListRef() const;
  std::vector<Tensor> toTensorVector() const;
  const std::vector<Tensor>& toTensorListRef() const;
  ScalarType toScalarType() const;
  Device toDevice() const;
  Generator* toGenerator() const;  // nullptr for None

  // Short description for traces and error messages: "Tensor[2, 3] Float", "1.5", "[0, 1]".
  std::string str() const;

 private:
  [[noreturn]] void throwNotTensor() const;  // "IValue: expected Tensor but got <kind>"
  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, Shape,
               std::vector<Tensor>, ScalarType, Device, Generator*>
      v_;
};

using Stack = std::vector<IValue>;

}  // namespace remat
