#!/usr/bin/env bash
# cmake_check.sh — the default CMake build as a newcomer runs it (README, docs/install.md), for
# .ci/run: exactly
#   cmake -S . -B build && cmake --build build -j2 && ctest --test-dir build
# in a build folder of its own (default build-ci/, git-ignored), so that this path cannot rot
# unseen while CI runs Bazel. Extra arguments go to the configure step (-DREMAT_CUDA_EMU=ON).
#
# Compiler caching: where ccache is on PATH, CMAKE_CXX_COMPILER_LAUNCHER (read by CMake from the
# environment) runs the compiler through it with its cache in ~/.cache/remat/ccache, so a second
# run on the same machine, from any clone, recompiles only what changed. The commands stay the
# same; without ccache they simply compile everything.
#
# Usage: tools/cmake_check.sh [BUILD_DIR [CONFIGURE_ARGS...]]   (env: JOBS=2)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD="${1:-build-ci}"
shift || true
JOBS="${JOBS:-2}"

if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/remat/ccache}"
  export CCACHE_BASEDIR="$PWD"  # paths under the clone hashed relative to it: any clone hits
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
  # The clone's absolute path appears only in this flag, which maps it away from __FILE__ (the
  # relative map of CMakeLists.txt, which does the same for base_dir's relative paths, is hashed).
  export CCACHE_IGNOREOPTIONS="-fmacro-prefix-map=/*"
  # ccache leaves -fmacro-prefix-map out of its hash altogether, so an object compiled under another
  # map (the "..//" that never matched) would be reused with its old __FILE__: the maps of
  # CMakeLists.txt name the cache's namespace, and a change of them starts a fresh one.
  CCACHE_NAMESPACE="remat-$(grep -h 'prefix-map\|REMAT_SOURCE_FROM_BUILD' CMakeLists.txt | cksum | cut -d' ' -f1)"
  export CCACHE_NAMESPACE
  ccache --zero-stats >/dev/null
  echo "cmake_check: compiling through ccache ($CCACHE_DIR)"
else
  echo "cmake_check: ccache not found; compiling everything"
fi

cmake -S . -B "$BUILD" "$@"
cmake --build "$BUILD" -j"$JOBS"
rc=0
ctest --test-dir "$BUILD" --output-on-failure || rc=$?
command -v ccache >/dev/null 2>&1 && ccache --show-stats | grep -E "Hits|Misses" || true
exit $rc
