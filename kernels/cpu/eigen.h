// Eigen as remat includes it (no PyTorch counterpart: ATen's CPU kernels vectorize with their
// own ATen/cpu/vec). Every remat file that uses Eigen includes it through here, never
// <Eigen/...> directly.
//
// The intrinsics come first, through kernels/cpu/x86_intrinsics.h, which keeps GCC 12's false
// "'__Y' may be used uninitialized" reports from the AVX-512 intrinsics' code out of the build
// (hundreds of them come through Eigen's packet math). The same two warnings are off in Eigen's
// own headers too, should a file have included <immintrin.h> before this; remat's code keeps them.
#pragma once

#include "kernels/cpu/x86_intrinsics.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>                          // IWYU pragma: export
#include <unsupported/Eigen/SpecialFunctions>  // IWYU pragma: export
#pragma GCC diagnostic pop
