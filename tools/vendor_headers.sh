#!/usr/bin/env bash
# vendor_headers.sh — copies the header-only dependencies of the CMake build into
# third_party_local/ (git-ignored): Eigen (Eigen/ and unsupported/), Catch2 v2 (catch2/) and
# nlohmann/json (nlohmann/), from the Debian packages libeigen3-dev, catch2 and
# nlohmann-json3-dev. The folder then travels to machines without those packages (the GPU
# check machine: tools/gpu_check.sh).
# Usage: tools/vendor_headers.sh [SOURCE_INCLUDE_DIR, default /usr/include]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SRC="${1:-/usr/include}"
DEST=third_party_local

copy() {  # source-path name-in-dest package
  if [[ ! -e "$1" ]]; then
    echo "vendor_headers: missing $1 (Debian package $3)" >&2
    exit 1
  fi
  rm -rf "${DEST:?}/$2"
  cp -rp "$1" "$DEST/$2"  # -p: the same timestamps, so vendoring again rebuilds nothing
}

mkdir -p "$DEST"
copy "$SRC/eigen3/Eigen" Eigen libeigen3-dev
copy "$SRC/eigen3/unsupported" unsupported libeigen3-dev
copy "$SRC/catch2" catch2 catch2
copy "$SRC/nlohmann" nlohmann nlohmann-json3-dev
grep -q 'Catch v2\.' "$DEST/catch2/catch.hpp" || {
  echo "vendor_headers: $DEST/catch2/catch.hpp is not Catch2 v2" >&2
  exit 1
}
echo "vendor_headers: headers in $DEST/ ($(du -sh "$DEST" | cut -f1))"
