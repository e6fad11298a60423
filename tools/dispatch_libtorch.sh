#!/usr/bin/env bash
# Mirrors nothing in PyTorch: builds and runs tools/dispatch_overhead_libtorch.cpp, the libtorch
# side of bench/dispatch_overhead, against whichever libtorch this machine has.
#
#   tools/dispatch_libtorch.sh                 # build (if stale) and run; prints `key value` lines
#   tools/dispatch_libtorch.sh --build-only    # build only; prints the binary's path
#   bazel-bin/bench/dispatch_overhead --libtorch "$(tools/dispatch_libtorch.sh --build-only)"
#
# Where libtorch comes from, first found wins:
#   1. TORCH_DIR: a torch wheel's package folder (.../site-packages/torch, with include/ and lib/);
#   2. TORCH_VENV: a virtual environment with torch installed, asked for the package folder
#      through its python;
#   3. Debian's libtorch-dev (/usr/include/torch; `apt-get install -y libtorch-dev`);
#   4. the venv /tmp/torch2, if it has torch.
# Neither Bazel, CMake nor CI uses this: the remat build never needs libtorch.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/tools/dispatch_overhead_libtorch.cpp"
out_dir="${REMAT_LIBTORCH_BUILD_DIR:-${TMPDIR:-/tmp}/remat-dispatch-libtorch}"
build_only=0
[[ "${1:-}" == "--build-only" ]] && build_only=1

die() { echo "dispatch_libtorch.sh: $*" >&2; exit 1; }

torch_dir="${TORCH_DIR:-}"
version=""
abi=""
have_debian=0
[[ -d /usr/include/torch && -e /usr/lib/x86_64-linux-gnu/libtorch_cpu.so ]] && have_debian=1
# A venv is asked only when named, or when there is no Debian libtorch to fall back on.
if [[ -z "$torch_dir" && ( -n "${TORCH_VENV:-}" || $have_debian == 0 ) ]]; then
  venv="${TORCH_VENV:-/tmp/torch2}"
  if [[ -x "$venv/bin/python" ]]; then
    torch_dir="$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)"
  fi
  [[ -n "$torch_dir" || -z "${TORCH_VENV:-}" ]] || die "TORCH_VENV=$venv: its python cannot import torch"
fi

if [[ -n "$torch_dir" ]]; then
  [[ -d "$torch_dir/include" && -d "$torch_dir/lib" ]] ||
    die "TORCH_DIR=$torch_dir has no include/ and lib/ (expected a torch wheel's package folder)"
  kind="wheel"
  incs=(-isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include")
  libdir="$torch_dir/lib"
  # The wheel records its version and C++ ABI; read them from its files, not from python, so
  # that TORCH_DIR works without an interpreter.
  if [[ -f "$torch_dir/version.py" ]]; then
    version="$(sed -n "s/^__version__ = '\(.*\)'.*/\1/p" "$torch_dir/version.py" | head -n1)"
  fi
  cmake_cfg="$torch_dir/share/cmake/Torch/TorchConfig.cmake"
elif (( have_debian )); then
  kind="debian"
  incs=(-isystem /usr/include/torch/csrc/api/include)
  libdir="/usr/lib/x86_64-linux-gnu"
  version="$(dpkg-query -W -f '${Version}' libtorch-dev 2>/dev/null || true)"
  cmake_cfg="/usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake"
else
  die "no libtorch found: set TORCH_DIR to a torch wheel's package folder, TORCH_VENV to a venv with torch, or run 'apt-get install -y libtorch-dev'"
fi

# libtorch is built with one value of _GLIBCXX_USE_CXX11_ABI; the binary must use the same.
if [[ -f "$cmake_cfg" ]]; then
  abi="$(sed -n 's/.*-D_GLIBCXX_USE_CXX11_ABI=\([01]\).*/\1/p' "$cmake_cfg" | head -n1)"
fi
abi_flag=()
[[ -n "$abi" ]] && abi_flag=(-D_GLIBCXX_USE_CXX11_ABI="$abi")
# So is the language standard: 1.13's headers need C++14 or later, 2.x's C++20 (its ATen.h stops
# with an #error otherwise). TorchConfig.cmake names the one it needs, if above C++17.
std="c++17"
if [[ -f "$cmake_cfg" ]] && grep -q -- '-std=c++20' "$cmake_cfg"; then std="c++20"; fi

mkdir -p "$out_dir"
bin="$out_dir/dispatch_overhead_libtorch_${kind}"
stamp="$bin.cmd"
# ATen's kernels live in libtorch_cpu; libtorch.so of a CUDA wheel would also pull in the CUDA
# libraries, which the CPU figure does not need.
cmd=(g++ -std="$std" -O2 -march=native "${abi_flag[@]}" "${incs[@]}" -I"$root"
     -DREMAT_LIBTORCH_VERSION="\"${version:-unknown}\"" "$src" -o "$bin"
     -L"$libdir" -Wl,-rpath,"$libdir" -Wl,--no-as-needed -ltorch_cpu -lc10 -Wl,--as-needed)
# Rebuild when the source or the command line changed (the compile takes most of a minute).
if [[ ! -x "$bin" || "$src" -nt "$bin" || "$root/tools/ns_per_call.h" -nt "$bin" || "$root/engine/core/clock.h" -nt "$bin" || ! -f "$stamp" || "$(cat "$stamp")" != "${cmd[*]}" ]]; then
  echo "dispatch_libtorch.sh: building against $kind libtorch ${version:-?} in $libdir" >&2
  "${cmd[@]}" || die "compiling $src failed (command: ${cmd[*]})"
  echo "${cmd[*]}" > "$stamp"
fi

if (( build_only )); then
  echo "$bin"
else
  exec "$bin"
fi
