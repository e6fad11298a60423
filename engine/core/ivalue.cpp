// Mirrors ATen/core/ivalue.cpp.
#include "engine/core/ivalue.h"

#include <sstream>

namespace remat {

const char* IValue::tagKind() const {
  switch (tag()) {
    case Tag::None: return "None";
    case Tag::Tensor: return "Tensor";
    case Tag::Double: return "float";
    case Tag::Int: return "int";
    case Tag::Bool: return "bool";
    case Tag::String: return "str";
    case Tag::IntList: return "int[]";
    case Tag::TensorList: return "Tensor[]";
    case Tag::ScalarType: return "ScalarType";
    case Tag::Device: return "Device";
    case Tag::Generator: return "Generator";
  }
  return "?";
}

void IValue::copyNonTrivial(const IValue& o) {
  switch (tag_) {
    case Tag::String: new (&u_.s) std::string(o.u_.s); break;
    case Tag::IntList: new (&u_.l) Shape(o.u_.l); break;
    case Tag::TensorList: new (&u_.tl) std::vector<Tensor>(o.u_.tl); break;
    default: REMAT_INTERNAL_ASSERT(false, "IValue::copyNonTrivial on ", tagKind());
  }
}

void IValue::moveNonTrivial(IValue& o) noexcept {
  switch (tag_) {
    case Tag::String: new (&u_.s) std::string(std::move(o.u_.s)); break;
    case Tag::IntList: new (&u_.l) Shape(std::move(o.u_.l)); break;
    case Tag::TensorList: new (&u_.tl) std::vector<Tensor>(std::move(o.u_.tl)); break;
    default: break;
  }
}

void IValue::destroyNonTrivial() noexcept {
  switch (tag_) {
    case Tag::String: u_.s.~basic_string(); break;
    case Tag::IntList: u_.l.~vector(); break;
    case Tag::TensorList: u_.tl.~vector(); break;
    default: break;
  }
}

#define REMAT_IVALUE_EXPECT(TAG, NAME) \
  REMAT_CHECK(tag() == Tag::TAG, "IValue: expected " NAME " but got ", tagKind())

void IValue::throwNotTensor() const {
  throw Error(detail::str("IValue: expected Tensor but got ", tagKind()));  // REMAT_IVALUE_EXPECT's text
}
double IValue::toDouble() const {
  if (isInt()) return static_cast<double>(u_.i);
  REMAT_IVALUE_EXPECT(Double, "float");
  return u_.d;
}
int64_t IValue::toInt() const { REMAT_IVALUE_EXPECT(Int, "int"); return u_.i; }
bool IValue::toBool() const { REMAT_IVALUE_EXPECT(Bool, "bool"); return u_.b; }
const std::string& IValue::toStringRef() const { REMAT_IVALUE_EXPECT(String, "str"); return u_.s; }
Shape IValue::toIntVector() const { return toIntListRef(); }
const Shape& IValue::toIntListRef() const { REMAT_IVALUE_EXPECT(IntList, "int[]"); return u_.l; }
std::vector<Tensor> IValue::toTensorVector() const { return toTensorListRef(); }
const std::vector<Tensor>& IValue::toTensorListRef() const {
  REMAT_IVALUE_EXPECT(TensorList, "Tensor[]");
  return u_.tl;
}
ScalarType IValue::toScalarType() const { REMAT_IVALUE_EXPECT(ScalarType, "ScalarType"); return u_.st; }
Device IValue::toDevice() const { REMAT_IVALUE_EXPECT(Device, "Device"); return u_.dev; }
Generator* IValue::toGenerator() const {
  if (isNone()) return nullptr;
  REMAT_IVALUE_EXPECT(Generator, "Generator");
  return u_.g;
}

#undef REMAT_IVALUE_EXPECT

std::string IValue::str() const {
  std::ostringstream os;
  switch (tag()) {
    case Tag::None: os << "None"; break;
    case Tag::Tensor: {
      const Tensor& t = u_.t;
      os << "Tensor" << t.sizes() << " " << toString(t.dtype());
      if (!t.device().is_cpu()) os << " " << t.device();
      break;
    }
    case Tag::Double: os << u_.d; break;
    case Tag::Int: os << u_.i; break;
    case Tag::Bool: os << (u_.b ? "True" : "False"); break;
    case Tag::String: os << '"' << u_.s << '"'; break;
    case Tag::IntList: os << u_.l; break;
    case Tag::TensorList: os << "Tensor[" << u_.tl.size() << "]"; break;
    case Tag::ScalarType: os << toString(u_.st); break;
    case Tag::Device: os << u_.dev; break;
    case Tag::Generator: os << "Generator"; break;
  }
  return os.str();
}

}  // namespace remat
