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

#define REMAT_IVALUE_EXPECT(TAG, NAME) \
  REMAT_CHECK(tag() == Tag::TAG, "IValue: expected " NAME " but got ", tagKind())

void IValue::throwNotTensor() const {
  throw Error(detail::str("IValue: expected Tensor but got ", tagKind()));  // REMAT_IVALUE_EXPECT's text
}
double IValue::toDouble() const {
  if (isInt()) return static_cast<double>(std::get<int64_t>(v_));
  REMAT_IVALUE_EXPECT(Double, "float");
  return std::get<double>(v_);
}
int64_t IValue::toInt() const { REMAT_IVALUE_EXPECT(Int, "int"); return std::get<int64_t>(v_); }
bool IValue::toBool() const { REMAT_IVALUE_EXPECT(Bool, "bool"); return std::get<bool>(v_); }
const std::string& IValue::toStringRef() const { REMAT_IVALUE_EXPECT(String, "str"); return std::get<std::string>(v_); }
Shape IValue::toIntVector() const { return toIntListRef(); }
const Shape& IValue::toIntListRef() const { REMAT_IVALUE_EXPECT(IntList, "int[]"); return std::get<Shape>(v_); }
std::vector<Tensor> IValue::toTensorVector() const { return toTensorListRef(); }
const std::vector<Tensor>& IValue::toTensorListRef() const {
  REMAT_IVALUE_EXPECT(TensorList, "Tensor[]");
  return std::get<std::vector<Tensor>>(v_);
}
ScalarType IValue::toScalarType() const { REMAT_IVALUE_EXPECT(ScalarType, "ScalarType"); return std::get<ScalarType>(v_); }
Device IValue::toDevice() const { REMAT_IVALUE_EXPECT(Device, "Device"); return std::get<Device>(v_); }
Generator* IValue::toGenerator() const {
  if (isNone()) return nullptr;
  REMAT_IVALUE_EXPECT(Generator, "Generator");
  return std::get<Generator*>(v_);
}

#undef REMAT_IVALUE_EXPECT

std::string IValue::str() const {
  std::ostringstream os;
  switch (tag()) {
    case Tag::None: os << "None"; break;
    case Tag::Tensor: {
      const Tensor& t = std::get<Tensor>(v_);
      os << "Tensor" << t.sizes() << " " << toString(t.dtype());
      if (!t.device().is_cpu()) os << " " << t.device();
      break;
    }
    case Tag::Double: os << std::get<double>(v_); break;
    case Tag::Int: os << std::get<int64_t>(v_); break;
    case Tag::Bool: os << (std::get<bool>(v_) ? "True" : "False"); break;
    case Tag::String: os << '"' << std::get<std::string>(v_) << '"'; break;
    case Tag::IntList: os << std::get<Shape>(v_); break;
    case Tag::TensorList: os << "Tensor[" << std::get<std::vector<Tensor>>(v_).size() << "]"; break;
    case Tag::ScalarType: os << toString(std::get<ScalarType>(v_)); break;
    case Tag::Device: os << std::get<Device>(v_); break;
    case Tag::Generator: os << "Generator"; break;
  }
  return os.str();
}

}  // namespace remat
