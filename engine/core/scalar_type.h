// Mirrors c10/core/ScalarType.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

#include "engine/core/bfloat16.h"

namespace remat {

enum class ScalarType : int8_t { Float, Double, BFloat16, Half, Long, Bool };
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kBool = ScalarType::Bool;

constexpr size_t elementSize(ScalarType t) {
  switch (t) {
    case kFloat: return 4;
    case kDouble: return 8;
    case kBFloat16: return 2;
    case kHalf: return 2;
    case kLong: return 8;
    case kBool: return 1;
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
  }
  return "Unknown";
}

constexpr bool isFloatingType(ScalarType t) {
  return t == kFloat || t == kDouble || t == kBFloat16 || t == kHalf;
}

// Type promotion for two tensor operands (PyTorch's table restricted to remat's types).
constexpr ScalarType promoteTypes(ScalarType a, ScalarType b) {
  if (a == b) return a;
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

}  // namespace remat
