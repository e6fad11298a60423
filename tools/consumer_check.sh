#!/usr/bin/env bash
# consumer_check.sh — remat used the way another project uses it, from a temporary folder
# (docs/install.md). Each case prints `consumer: PASS|FAIL NAME (Ns)`; the last line is
# `consumer: N passed, M failed` (.ci/run counts these as test cases). The cases:
#   install            a CMake Release build of the library alone, `cmake --install` into a
#                      temporary prefix; the installed files are libremat.so, the CMake package,
#                      remat.pc, CHANGELOG.md and exactly the headers remat.h reaches
#   find_package       tests/consumer/cmake (find_package(remat 0.3 CONFIG REQUIRED) and
#                      remat::remat, nothing else) builds examples/quickstart.cpp and
#                      tests/consumer/version.cpp outside the tree; both run
#   version            find_package(remat 0.2) and (remat 0.4) are refused; the found version
#                      is CHANGELOG.md's newest
#   components         find_package(remat COMPONENTS cuda) is found when remat was built with
#                      CUDA, refused when not
#   pkg-config         the same two programs built with `pkg-config --cflags --libs remat`; both run
#   header-warnings    tests/consumer/header_warnings.cpp (includes remat.h from the prefix)
#                      compiles with -Wall -Wextra -Werror, as C++17 and as C++20
#   add_subdirectory   tests/consumer/subdirectory builds remat from this tree with
#                      add_subdirectory (only the library) and quickstart.cpp against remat::remat
#   bazel              a temporary workspace with local_repository(@remat) and remat_dependencies()
#                      (tests/consumer/bazel/) builds quickstart.cpp against @remat//:remat; it runs
#
# Compiles go through ccache when it is on PATH (an apt system without it gets it installed;
# REMAT_CONSUMER_CCACHE=0: neither), its cache in ~/.cache/remat/ccache; Bazel uses remat's disk
# cache (~/.cache/remat/bazel-disk-cache) with an output base in the temporary folder. A first run
# compiles the library twice (CMake, Bazel); later runs take their objects from the caches.
# Usage: tools/consumer_check.sh   (env: JOBS=nproc, REMAT_CONSUMER_KEEP=1 keeps the temporary
#                                   folder, REMAT_CONSUMER_SKIP_BAZEL=1)
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
JOBS="${JOBS:-$(nproc)}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/remat-consumer.XXXXXX")"
PREFIX="$TMP/prefix"
PASSED=0
FAILED=0
T_START=$(date +%s)

cleanup() {
  if [[ "${REMAT_CONSUMER_KEEP:-0}" == 1 ]]; then
    echo "consumer: kept $TMP"
  else
    chmod -R u+w "$TMP" 2>/dev/null  # Bazel's outputs are read-only
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT

say() { echo "consumer: $*"; }

# run_case NAME FUNCTION — runs FUNCTION with its output in $TMP/logs/NAME.log; prints PASS or
# FAIL with the log's end.
mkdir -p "$TMP/logs"
run_case() {
  local name="$1" fn="$2" t0 rc log="$TMP/logs/$1.log"
  t0=$(date +%s)
  ( set -e; "$fn" ) >"$log" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]]; then
    PASSED=$((PASSED + 1))
    say "PASS $name ($(( $(date +%s) - t0 ))s)"
  else
    FAILED=$((FAILED + 1))
    say "FAIL $name ($(( $(date +%s) - t0 ))s, exit $rc)"
    echo "the end of its log:"
    tail -n 40 "$log" | sed 's/^/    /'
  fi
}

# ---- compilers -------------------------------------------------------------------------------
CXX="${CXX:-g++}"
LAUNCHER=()
if [[ "${REMAT_CONSUMER_CCACHE:-1}" != 0 ]]; then
  if ! command -v ccache >/dev/null 2>&1 && [[ -f /etc/debian_version && $(id -u) -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ccache >/dev/null 2>&1 ||
      say "ccache could not be installed; compiling without it"
  fi
  if command -v ccache >/dev/null 2>&1; then
    export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/remat/ccache}"
    export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-2G}"
    LAUNCHER=(ccache)
  fi
fi
CMAKE_LAUNCHER=()
[[ ${#LAUNCHER[@]} -gt 0 ]] && CMAKE_LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# A copy of the outside project with the example beside it: nothing of remat's tree is on its
# include path.
consumer_project() {  # DEST
  mkdir -p "$1"
  cp "$ROOT/tests/consumer/cmake/CMakeLists.txt" "$ROOT/tests/consumer/version.cpp" \
     "$ROOT/examples/quickstart.cpp" "$1/"
}

# ---- install ---------------------------------------------------------------------------------
case_install() {
  cmake -S "$ROOT" -B "$TMP/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREMAT_BUILD_TESTS=OFF \
        -DREMAT_BUILD_PROGRAMS=OFF -DREMAT_INSTALL=ON "${CMAKE_LAUNCHER[@]}"
  cmake --build "$TMP/build" -j "$JOBS"
  cmake --install "$TMP/build" --prefix "$PREFIX"

  cd "$PREFIX"
  find . \( -type f -o -type l \) | sed 's|^\./||' | sort >"$TMP/installed.txt"
  # The headers remat.h reaches, as the compiler finds them.
  (cd "$ROOT" && "$CXX" -std=c++17 -MM -I. -x c++ remat.h) | tr ' ' '\n' | grep '\.h$' |
    sed 's|^|include/remat/|' >"$TMP/expected.txt"
  local libdir
  libdir=$(dirname "$(grep -E '(^|/)libremat\.so$' "$TMP/installed.txt")")
  local version
  version=$(sed -n 's/^Version: //p' "$PREFIX/$libdir/pkgconfig/remat.pc")
  {
    echo "$libdir/libremat.so"
    echo "$libdir/libremat.so.${version%.*}"
    echo "$libdir/libremat.so.$version"
    echo "$libdir/pkgconfig/remat.pc"
    for f in remat-config.cmake remat-config-version.cmake remat-targets.cmake remat-targets-release.cmake; do
      echo "$libdir/cmake/remat/$f"
    done
    echo "share/doc/remat/CHANGELOG.md"
  } >>"$TMP/expected.txt"
  sort -o "$TMP/expected.txt" "$TMP/expected.txt"
  echo "installed into $PREFIX:"
  sed 's/^/  /' "$TMP/installed.txt"
  diff -u "$TMP/expected.txt" "$TMP/installed.txt"  # +: installed, not expected; -: missing
  echo "$(grep -c '^include/' "$TMP/installed.txt") headers, as remat.h reaches them"
}

# ---- find_package ----------------------------------------------------------------------------
case_find_package() {
  consumer_project "$TMP/cmake-consumer"
  cmake -S "$TMP/cmake-consumer" -B "$TMP/cmake-consumer/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$PREFIX" "${CMAKE_LAUNCHER[@]}"
  cmake --build "$TMP/cmake-consumer/build" -j "$JOBS" -v
  "$TMP/cmake-consumer/build/quickstart"
  "$TMP/cmake-consumer/build/version"
}

# ---- version ---------------------------------------------------------------------------------
case_version() {
  local v found newest
  found=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$PREFIX"/lib*/cmake/remat/remat-config-version.cmake)
  for v in 0.2 0.4; do
    if cmake -S "$TMP/cmake-consumer" -B "$TMP/version-$v" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
             -DREMAT_REQUESTED_VERSION="$v" >"$TMP/version-$v.log" 2>&1; then
      echo "find_package(remat $v) accepted remat $found"
      return 1
    fi
    # CMake names the package it found and why it did not take it.
    grep -q "requested version \"$v\"" "$TMP/version-$v.log"
    grep -q "remat-config.cmake, version: $found" "$TMP/version-$v.log"
    echo "find_package(remat $v) refused remat $found:"
    grep -A6 '^CMake Error' "$TMP/version-$v.log"
  done
  newest=$(grep -m1 -oE '^## [0-9]+\.[0-9]+\.[0-9]+' "$ROOT/CHANGELOG.md" | cut -c4-)
  echo "the package's version $found; CHANGELOG.md's newest entry $newest"
  [[ -n "$found" && "$found" == "$newest" ]]
}

# ---- components ------------------------------------------------------------------------------
case_components() {
  local cuda
  cuda=$(sed -n 's/^set(remat_CUDA \(.*\))$/\1/p' "$PREFIX"/lib*/cmake/remat/remat-config.cmake)
  echo "remat_CUDA: $cuda"
  if cmake -S "$TMP/cmake-consumer" -B "$TMP/components" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
           -DREMAT_REQUESTED_COMPONENTS=cuda >"$TMP/components.log" 2>&1; then
    echo "find_package(remat COMPONENTS cuda) found it"
    [[ "$cuda" == ON ]]
  else
    grep -A6 '^CMake Error' "$TMP/components.log"
    [[ "$cuda" == OFF ]]
  fi
}

# ---- pkg-config ------------------------------------------------------------------------------
case_pkg_config() {
  local pc_dir flags libdir version
  pc_dir=$(dirname "$(find "$PREFIX" -name remat.pc)")
  export PKG_CONFIG_PATH="$pc_dir"
  version=$(pkg-config --modversion remat)
  read -ra flags <<<"$(pkg-config --cflags --libs remat)"
  libdir=$(pkg-config --variable=libdir remat)
  consumer_project "$TMP/pc-consumer"
  cd "$TMP/pc-consumer"
  set -x
  "${LAUNCHER[@]}" "$CXX" -std=c++17 -O2 quickstart.cpp "${flags[@]}" -Wl,-rpath,"$libdir" -o quickstart
  "${LAUNCHER[@]}" "$CXX" -std=c++17 -O2 -DREMAT_PACKAGE_VERSION="\"$version\"" version.cpp "${flags[@]}" \
    -Wl,-rpath,"$libdir" -o version
  ./quickstart
  ./version
}

# ---- header warnings -------------------------------------------------------------------------
case_header_warnings() {
  local std include
  include=$(find "$PREFIX" -path '*/include/remat' -type d)
  for std in c++17 c++20; do
    # -O2: the warnings of the optimiser's passes (maybe-uninitialized, ...) too.
    (set -x; "$CXX" -std=$std -O2 -Wall -Wextra -Werror -I"$include" -c "$ROOT/tests/consumer/header_warnings.cpp" \
      -o "$TMP/header_warnings_$std.o")
  done
}

# ---- add_subdirectory ------------------------------------------------------------------------
case_add_subdirectory() {
  local dir="$TMP/subdirectory-consumer"
  mkdir -p "$dir"
  cp "$ROOT/tests/consumer/subdirectory/CMakeLists.txt" "$ROOT/examples/quickstart.cpp" "$dir/"
  cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREMAT_SOURCE_DIR="$ROOT" \
        "${CMAKE_LAUNCHER[@]}"
  # Below another project remat builds only the library: no test, no program, no libremat.so.
  if ninja -C "$dir/build" -t targets all |
      grep -E '(^|/)(test_[a-z0-9_]+|bench_[a-z0-9_]+|examples_[a-z0-9_]+|remat_shared|libremat\.so[.0-9]*): '; then
    echo "remat built more than the library below another project"
    return 1
  fi
  cmake --build "$dir/build" -j "$JOBS"
  "$dir/build/quickstart"
}

# ---- bazel -----------------------------------------------------------------------------------
case_bazel() {
  local ws="$TMP/bazel-consumer"
  mkdir -p "$ws"
  sed "s|@REMAT_PATH@|$ROOT|" "$ROOT/tests/consumer/bazel/WORKSPACE.in" >"$ws/WORKSPACE"
  cp "$ROOT/tests/consumer/bazel/BUILD.in" "$ws/BUILD"
  cp "$ROOT/tests/consumer/bazel/bazelrc.in" "$ws/.bazelrc"
  echo "build --disk_cache=~/.cache/remat/bazel-disk-cache" >>"$ws/.bazelrc"
  cp "$ROOT/examples/quickstart.cpp" "$ws/"
  cd "$ws"
  # --batch: no server is left behind; the output base goes with the temporary folder.
  "$ROOT/bazelw" --batch --output_base="$TMP/bazel-output-base" build //:quickstart
  "$ws/bazel-bin/quickstart"
}

run_case install case_install
if [[ -d "$PREFIX" ]]; then
  run_case find_package case_find_package
  run_case version case_version
  run_case components case_components
  run_case pkg-config case_pkg_config
  run_case header-warnings case_header_warnings
else
  for name in find_package version components pkg-config header-warnings; do
    FAILED=$((FAILED + 1))
    say "FAIL $name (nothing was installed)"
  done
fi
run_case add_subdirectory case_add_subdirectory
if [[ "${REMAT_CONSUMER_SKIP_BAZEL:-0}" != 1 ]]; then
  run_case bazel case_bazel
fi

say "$(( $(date +%s) - T_START ))s in all"
say "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
