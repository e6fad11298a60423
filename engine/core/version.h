// Mirrors torch/csrc/api/include/torch/version.h.in (TORCH_VERSION_MAJOR/MINOR/PATCH, TORCH_VERSION).
#pragma once

// remat's version, written here once: CMake reads these three lines (project(VERSION), the package
// version file find_package checks, remat.pc), Bazel compiles the header as it is. CHANGELOG.md says
// what each version added and changed. While the major version is 0, a new minor version may break
// the API: find_package(remat 0.3) accepts 0.3.x only.
#define REMAT_VERSION_MAJOR 0
#define REMAT_VERSION_MINOR 3
#define REMAT_VERSION_PATCH 0

#define REMAT_VERSION_STR_(x) #x
#define REMAT_VERSION_STR(x) REMAT_VERSION_STR_(x)
// "0.3.0": the version of the headers a program compiled against.
#define REMAT_VERSION                                                              \
  REMAT_VERSION_STR(REMAT_VERSION_MAJOR)                                           \
  "." REMAT_VERSION_STR(REMAT_VERSION_MINOR) "." REMAT_VERSION_STR(REMAT_VERSION_PATCH)

namespace remat {

// The version of the library linked, "MAJOR.MINOR.PATCH" (e.g. "0.3.0"). It equals REMAT_VERSION
// unless a program runs against a libremat.so other than the one whose headers it compiled with.
const char* version();

}  // namespace remat
