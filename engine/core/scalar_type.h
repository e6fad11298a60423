// Mirrors c10/core/ScalarType.h.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <ostream>

#include "engine/core/bfloat16.h"

namespace remat {

// ComplexFloat and ComplexDouble (c10's complex64 and complex128) serve the rotary embeddings as
// torchtitan writes them (view_as_complex, mul, view_as_real) and nothing else: other ops refuse
// them, naming the op and the dtype (ops/structured.h, refuse_complex).
enum class ScalarType : int8_t { Float, Double, BFloat16, Half, Long, Bool, ComplexFloat, ComplexDouble };
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;

constexpr size_t elementSize(ScalarType t) {
  switch (t) {
    case kFloat: return 4;
    case kDouble: return 8;
    case kBFloat16: return 2;
    case kHalf: return 2;
    case kLong: return 8;
    case kBool: return 1;
    case kComplexFloat: return 8;
    case kComplexDouble: return 16;
  }
  return 0;
}

constexpr const char* toString(ScalarType t) {
  switch (t) {
    case kFloat: return "Float";
    case kDouble: return "Double";
    case kBFloat16: return "BFloat16";
    case kHalf: return "Half";
    case kLong: return "Long";
    case kBool: return "Bool";
    case kComplexFloat: return "ComplexFloat";
    case kComplexDouble: return "ComplexDouble";
  }
  return "Unknown";
}

constexpr bool isFloatingType(ScalarType t) {
  return t == kFloat || t == kDouble || t == kBFloat16 || t == kHalf;
}

constexpr bool isComplexType(ScalarType t) { return t == kComplexFloat || t == kComplexDouble; }

// What autograd differentiates (c10's isDifferentiableType): floating and complex.
constexpr bool isDifferentiableType(ScalarType t) { return isFloatingType(t) || isComplexType(t); }

// c10's toRealValueType and toComplexType (Float <-> ComplexFloat, Double <-> ComplexDouble).
constexpr ScalarType toRealValueType(ScalarType t) {
  return t == kComplexFloat ? kFloat : t == kComplexDouble ? kDouble : t;
}
constexpr ScalarType toComplexType(ScalarType t) { return t == kDouble ? kComplexDouble : kComplexFloat; }

// Type promotion for two tensor operands (PyTorch's table restricted to remat's types).
constexpr ScalarType promoteTypes(ScalarType a, ScalarType b) {
  if (a == b) return a;
  // a complex operand: complex, of the wider precision (complex64 with a double is complex128)
  if (a == kComplexDouble || b == kComplexDouble) return kComplexDouble;
  if (a == kComplexFloat || b == kComplexFloat) return a == kDouble || b == kDouble ? kComplexDouble : kComplexFloat;
  if (a == kDouble || b == kDouble) return kDouble;
  if (a == kFloat || b == kFloat) return kFloat;
  if ((a == kBFloat16 && b == kHalf) || (a == kHalf && b == kBFloat16)) return kFloat;
  if (a == kBFloat16 || b == kBFloat16) return kBFloat16;
  if (a == kHalf || b == kHalf) return kHalf;
  if (a == kLong || b == kLong) return kLong;
  return kBool;
}

inline std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << toString(t); }

// Maps a C++ element type to its ScalarType (for typed kernel dispatch).
template <class T> struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = kFloat; };
template <> struct CppTypeToScalarType<double> { static constexpr ScalarType value = kDouble; };
template <> struct CppTypeToScalarType<BFloat16> { static constexpr ScalarType value = kBFloat16; };
template <> struct CppTypeToScalarType<Half> { static constexpr ScalarType value = kHalf; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = kLong; };
template <> struct CppTypeToScalarType<bool> { static constexpr ScalarType value = kBool; };
template <> struct CppTypeToScalarType<std::complex<float>> { static constexpr ScalarType value = kComplexFloat; };
template <> struct CppTypeToScalarType<std::complex<double>> { static constexpr ScalarType value = kComplexDouble; };

}  // namespace remat
