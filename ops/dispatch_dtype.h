// Mirrors ATen/Dispatch.h (AT_DISPATCH_FLOATING_TYPES ...): run a lambda with `scalar_t` bound
// to the C++ type of a ScalarType.
#pragma once

#include <cstdint>

#include "engine/core/error.h"
#include "engine/core/scalar_type.h"

#define REMAT_DTYPE_CASE(ENUM, CTYPE, ...) \
  case ::remat::ScalarType::ENUM: {        \
    using scalar_t = CTYPE;                \
    return __VA_ARGS__();                  \
  }

#define REMAT_DTYPE_ERROR(TYPE, NAME) \
  throw ::remat::Error(::remat::detail::str("\"", NAME, "\" not implemented for '", ::remat::toString(TYPE), "'"))

// Float, Double, BFloat16, Half.
#define REMAT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                  \
  [&] {                                                                 \
    switch (TYPE) {                                                     \
      REMAT_DTYPE_CASE(Float, float, __VA_ARGS__)                       \
      REMAT_DTYPE_CASE(Double, double, __VA_ARGS__)                     \
      REMAT_DTYPE_CASE(BFloat16, ::remat::BFloat16, __VA_ARGS__)        \
      REMAT_DTYPE_CASE(Half, ::remat::Half, __VA_ARGS__)                \
      default: REMAT_DTYPE_ERROR(TYPE, NAME);                           \
    }                                                                   \
  }()

// Every remat dtype.
#define REMAT_DISPATCH_ALL_TYPES(TYPE, NAME, ...)                       \
  [&] {                                                                 \
    switch (TYPE) {                                                     \
      REMAT_DTYPE_CASE(Float, float, __VA_ARGS__)                       \
      REMAT_DTYPE_CASE(Double, double, __VA_ARGS__)                     \
      REMAT_DTYPE_CASE(BFloat16, ::remat::BFloat16, __VA_ARGS__)        \
      REMAT_DTYPE_CASE(Half, ::remat::Half, __VA_ARGS__)                \
      REMAT_DTYPE_CASE(Long, int64_t, __VA_ARGS__)                      \
      REMAT_DTYPE_CASE(Bool, bool, __VA_ARGS__)                         \
      default: REMAT_DTYPE_ERROR(TYPE, NAME);                           \
    }                                                                   \
  }()

// Every dtype but Bool (arithmetic).
#define REMAT_DISPATCH_NUMERIC_TYPES(TYPE, NAME, ...)                   \
  [&] {                                                                 \
    switch (TYPE) {                                                     \
      REMAT_DTYPE_CASE(Float, float, __VA_ARGS__)                       \
      REMAT_DTYPE_CASE(Double, double, __VA_ARGS__)                     \
      REMAT_DTYPE_CASE(BFloat16, ::remat::BFloat16, __VA_ARGS__)        \
      REMAT_DTYPE_CASE(Half, ::remat::Half, __VA_ARGS__)                \
      REMAT_DTYPE_CASE(Long, int64_t, __VA_ARGS__)                      \
      default: REMAT_DTYPE_ERROR(TYPE, NAME);                           \
    }                                                                   \
  }()
