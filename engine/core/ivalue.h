// Mirrors ATen/core/ivalue.h (IValue) and ATen/core/stack.h (Stack): the boxed values a boxed
// kernel, a dispatch mode or a custom op sees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <new>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/scalar_type.h"
#include "engine/core/tensor.h"

namespace remat {

class Generator;

// A tagged union, as c10's IValue is (not a std::variant: every boxed call copies, moves and
// destroys IValues, and a variant does each through a table of functions per alternative).
class IValue {
 public:
  enum class Tag : uint8_t { None, Tensor, Double, Int, Bool, String, IntList, TensorList, ScalarType, Device, Generator };

  IValue() noexcept { u_.bits = 0; }
  IValue(Tensor t) {  // NOLINT: implicit, as in PyTorch; an undefined Tensor boxes as None
    u_.bits = 0;
    if (t.defined()) {
      new (&u_.t) Tensor(std::move(t));
      tag_ = Tag::Tensor;
    }
  }
  IValue(double d) : tag_(Tag::Double) { u_.bits = 0; u_.d = d; }                 // NOLINT
  IValue(int64_t i) : tag_(Tag::Int) { u_.i = i; }                   // NOLINT
  IValue(int i) : tag_(Tag::Int) { u_.i = i; }                       // NOLINT
  IValue(bool b) : tag_(Tag::Bool) { u_.bits = 0; u_.b = b; }                     // NOLINT
  IValue(std::string s) : tag_(Tag::String) { new (&u_.s) std::string(std::move(s)); }  // NOLINT
  IValue(const char* s) : IValue(std::string(s)) {}                 // NOLINT
  IValue(Shape l) : tag_(Tag::IntList) { new (&u_.l) Shape(std::move(l)); }              // NOLINT
  IValue(std::vector<Tensor> l) : tag_(Tag::TensorList) { new (&u_.tl) std::vector<Tensor>(std::move(l)); }  // NOLINT
  IValue(ScalarType t) : tag_(Tag::ScalarType) { u_.bits = 0; u_.st = t; }       // NOLINT
  IValue(Device d) : tag_(Tag::Device) { u_.bits = 0; new (&u_.dev) Device(d); } // NOLINT
  IValue(Generator* g) {                      // NOLINT: non-owning; nullptr boxes as None
    u_.bits = 0;
    if (g) {
      u_.g = g;
      tag_ = Tag::Generator;
    }
  }
  template <class T>
  IValue(std::optional<T> o) {  // NOLINT
    u_.bits = 0;
    if (o) *this = IValue(std::move(*o));
  }

  // A Tensor held without a reference (c10::MaybeOwned's borrow), for the dispatcher's own
  // short-lived stacks of a call's arguments and returns, which never outlive the caller's
  // Tensors: it saves the atomic reference-count update per Tensor per boxing. A copy of it owns
  // its Tensor; moving it keeps the borrow; mutable access (toTensor() on a non-const IValue,
  // which a kernel may move from) first takes a reference.
  static IValue unsafe_borrow(const Tensor& t) {
    IValue v;
    if (t.defined()) {
      new (&v.u_.t) Tensor(Tensor::unsafe_borrow_t{}, t);
      v.tag_ = Tag::Tensor;
      v.borrowed_ = true;
    }
    return v;
  }

  IValue(const IValue& o) : tag_(o.tag_) {
    if (tag_ == Tag::Tensor) new (&u_.t) Tensor(o.u_.t);
    else if (isTrivial(tag_)) u_.bits = o.u_.bits;
    else copyNonTrivial(o);
  }
  // As a std::variant's: the source keeps its kind, with a moved-from value.
  IValue(IValue&& o) noexcept : tag_(o.tag_) { moveFrom(o); }
  IValue& operator=(IValue&& o) noexcept {
    if (this != &o) {
      destroy();
      tag_ = o.tag_;
      moveFrom(o);
    }
    return *this;
  }
  IValue& operator=(const IValue& o) {
    if (this != &o) *this = IValue(o);
    return *this;
  }
  ~IValue() { destroy(); }

  Tag tag() const { return tag_; }
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
  // unbox through it.
  const Tensor& toTensor() const {
    if (__builtin_expect(!isTensor(), 0)) throwNotTensor();
    return u_.t;
  }
  Tensor& toTensor() {
    if (__builtin_expect(!isTensor(), 0)) throwNotTensor();
    if (__builtin_expect(borrowed_, 0)) own();  // the caller may move the Tensor out
    return u_.t;
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
  static constexpr bool isTrivial(Tag t) {
    return !(t == Tag::Tensor || t == Tag::String || t == Tag::IntList || t == Tag::TensorList);
  }
  [[noreturn]] void throwNotTensor() const;  // "IValue: expected Tensor but got <kind>"
  void copyNonTrivial(const IValue& o);      // String, IntList, TensorList
  void moveFrom(IValue& o) noexcept {        // tag_ == o.tag_; this holds nothing yet
    if (tag_ == Tag::Tensor) {
      if (o.borrowed_) {
        new (&u_.t) Tensor(Tensor::unsafe_borrow_t{}, o.u_.t);
        borrowed_ = true;
      } else {
        new (&u_.t) Tensor(std::move(o.u_.t));
      }
    } else if (isTrivial(tag_)) {
      u_.bits = o.u_.bits;
    } else {
      moveNonTrivial(o);
    }
  }
  void moveNonTrivial(IValue& o) noexcept;
  void destroy() noexcept {
    if (tag_ == Tag::Tensor) {
      if (borrowed_) {
        u_.t.unsafeReleaseTensorImpl();
        borrowed_ = false;
      }
      u_.t.~Tensor();
    } else if (!isTrivial(tag_)) {
      destroyNonTrivial();
    }
    tag_ = Tag::None;
  }
  void destroyNonTrivial() noexcept;
  void own() {  // a borrowed Tensor becomes a reference of this IValue's own
    Tensor owned = u_.t;
    u_.t.unsafeReleaseTensorImpl();
    u_.t = std::move(owned);
    borrowed_ = false;
  }

  union Payload {
    Payload() {}
    ~Payload() {}
    uint64_t bits;  // every trivial alternative fits in 8 bytes: copied as one word
    Tensor t;
    double d;
    int64_t i;
    bool b;
    std::string s;
    Shape l;
    std::vector<Tensor> tl;
    ScalarType st;
    Device dev;
    Generator* g;
  } u_;
  Tag tag_ = Tag::None;
  bool borrowed_ = false;  // Tag::Tensor only: u_.t holds no reference
};
static_assert(sizeof(Device) <= sizeof(uint64_t), "IValue copies trivial alternatives as one word");

using Stack = std::vector<IValue>;

}  // namespace remat
