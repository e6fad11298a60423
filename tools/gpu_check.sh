#!/usr/bin/env bash
# gpu_check.sh — the GPU check of remat's CUDA backend, for a machine with a Hopper GPU, nvcc,
# CMake and ninja, but no network and no Bazel (the device machine of these sessions):
#   1. configures and builds remat with CMake for sm_90 (-DREMAT_CUDA=ON), quietly, ninja -j16;
#   2. runs every CUDA test binary (tests/**/cuda/**), one Catch2 summary per binary;
#   3. runs bench/ops and bench/memory_vs_recompute with --device cuda (skipped with a message
#      while those programs do not exist);
#   4. runs bench/torch_reference.py with the machine's PyTorch, if both are there;
#   5. prints one summary table.
# The header-only dependencies come from third_party_local/ (tools/vendor_headers.sh; the
# folder is git-ignored, so the device tool must carry it: carry=["third_party_local"]).
# Logs go to $OUT (the device tool's output folder) when set, else build/gpu/logs. Sized to
# finish in under 8 minutes on an H200 with 16 cores. Exit status: 1 if anything failed, 2 if
# nothing failed but tests skipped for lack of a device, else 0.
#
# Usage: tools/gpu_check.sh   (env: JOBS=16, REMAT_GPU_BUILD=build/gpu)
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD="${REMAT_GPU_BUILD:-build/gpu}"
LOGS="${OUT:-$BUILD/logs}"
JOBS="${JOBS:-16}"
mkdir -p "$LOGS"

ROWS=()      # "step|result|detail"
FAILED=0
row() { ROWS+=("$1|$2|$3"); }
fail() { FAILED=1; row "$1" "FAILED" "$2"; }
now() { date +%s; }
T0=$(now)

# ---- 0. the machine -------------------------------------------------------------------------
GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
NVCC=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -n 1)
row "machine" "${GPU:+ok}${GPU:-no GPU}" "${GPU:+$GPU; }nvcc ${NVCC:-missing}, cmake $(cmake --version 2>/dev/null | head -n 1 | awk '{print $3}'), $(nproc) cores"

if [[ ! -f third_party_local/Eigen/Core || ! -f third_party_local/catch2/catch.hpp ]]; then
  fail "headers" "third_party_local/ missing: run tools/vendor_headers.sh and carry the folder"
fi

# ---- 1. configure and build -----------------------------------------------------------------
build_ok=0
t=$(now)
if [[ $FAILED -eq 0 ]]; then
  if cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREMAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      >"$LOGS/configure.log" 2>&1; then
    if ninja -C "$BUILD" -j "$JOBS" >"$LOGS/build.log" 2>&1; then
      build_ok=1
      row "build" "ok" "$(( $(now) - t ))s, sm_90, $(grep -c 'Building' "$LOGS/build.log") files compiled"
    else
      fail "build" "ninja failed after $(( $(now) - t ))s (see build.log)"
      grep -E 'error|Error' "$LOGS/build.log" | head -n 20
    fi
  else
    fail "configure" "cmake failed (see configure.log)"
    tail -n 20 "$LOGS/configure.log"
  fi
fi

# ---- 2. CUDA tests --------------------------------------------------------------------------
# Catch2 v2 prints "All tests passed (A assertions in N test cases)" or
# "test cases: N | P passed | F failed".
if [[ $build_ok -eq 1 ]]; then
  mapfile -t TESTS < <(find "$BUILD/tests" -path '*/cuda/*' -type f -perm -u+x -name '*_test' | sort)
  total_cases=0
  total_failed=0
  bad_binaries=0  # failed cases, crashes, timeouts
  skipped_binaries=0
  for bin in "${TESTS[@]}"; do
    name="${bin#"$BUILD"/tests/}"
    log="$LOGS/test_${name//\//_}.log"
    t=$(now)
    timeout 300 "$bin" >"$log" 2>&1
    rc=$?
    secs=$(( $(now) - t ))
    summary=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -n 1)
    skips=$(grep -c 'no CUDA device: skipped' "$log")
    [[ $skips -gt 0 ]] && skipped_binaries=$((skipped_binaries + 1))
    n=""
    nfail=0
    if [[ "$summary" =~ ^All\ tests\ passed.*in\ ([0-9]+)\ test\ case ]]; then
      n=${BASH_REMATCH[1]}
    elif [[ "$summary" =~ ^test\ cases:\ ([0-9]+) ]]; then  # also when no case asserted anything
      n=${BASH_REMATCH[1]}
      [[ "$summary" =~ \|\ ([0-9]+)\ failed ]] && nfail=${BASH_REMATCH[1]}
    fi
    if [[ -z "$n" ]]; then
      bad_binaries=$((bad_binaries + 1))
      fail "test $name" "crashed or timed out (exit $rc, ${secs}s, see $(basename "$log"))"
      tail -n 20 "$log"
      continue
    fi
    total_cases=$((total_cases + n))
    total_failed=$((total_failed + nfail))
    if [[ $nfail -gt 0 || $rc -ne 0 ]]; then
      bad_binaries=$((bad_binaries + 1))
    fi
    if [[ $nfail -gt 0 ]]; then
      fail "test $name" "$nfail of $n cases failed, ${secs}s"
      grep -B 2 -A 12 -E 'FAILED:' "$log" | head -n 40
    elif [[ $rc -ne 0 ]]; then
      fail "test $name" "exit $rc after all $n cases passed"
    else
      row "test $name" "ok" "$n cases, ${secs}s$([[ $skips -gt 0 ]] && echo ", $skips SKIPPED (no device)")"
    fi
  done
  verdict=ok
  [[ $skipped_binaries -gt 0 ]] && verdict=SKIPPED
  [[ $bad_binaries -gt 0 ]] && verdict=FAILED
  row "tests (all)" "$verdict" \
      "${#TESTS[@]} binaries ($bad_binaries bad), $total_cases cases, $total_failed failed$([[ $skipped_binaries -gt 0 ]] && echo "; cases SKIPPED for lack of a device in $skipped_binaries binaries")"
fi

# ---- 3. benchmarks --------------------------------------------------------------------------
for b in ops memory_vs_recompute; do
  if [[ $build_ok -ne 1 ]]; then
    break
  elif [[ ! -x "$BUILD/bench/$b" ]]; then
    row "bench $b" "skipped" "bench/$b.cpp not in this tree yet"
  else
    t=$(now)
    if timeout 150 "$BUILD/bench/$b" --device cuda >"$LOGS/bench_$b.log" 2>&1; then
      row "bench $b" "ok" "$(( $(now) - t ))s (see bench_$b.log)"
      echo "== bench/$b --device cuda"
      tail -n 40 "$LOGS/bench_$b.log"
    else
      fail "bench $b" "exit $? after $(( $(now) - t ))s (see bench_$b.log)"
      tail -n 20 "$LOGS/bench_$b.log"
    fi
  fi
done

# ---- 4. the PyTorch reference ---------------------------------------------------------------
if [[ ! -f bench/torch_reference.py ]]; then
  row "torch_reference" "skipped" "bench/torch_reference.py not in this tree yet"
elif ! python3 -c 'import torch' >/dev/null 2>&1; then
  row "torch_reference" "skipped" "python3 has no torch"
else
  t=$(now)
  if timeout 150 python3 bench/torch_reference.py >"$LOGS/torch_reference.log" 2>&1; then
    row "torch_reference" "ok" "$(( $(now) - t ))s, torch $(python3 -c 'import torch; print(torch.__version__)')"
    echo "== bench/torch_reference.py"
    tail -n 40 "$LOGS/torch_reference.log"
  else
    fail "torch_reference" "exit $? (see torch_reference.log)"
    tail -n 20 "$LOGS/torch_reference.log"
  fi
fi

# ---- 5. summary -----------------------------------------------------------------------------
echo
echo "== remat GPU check ($(( $(now) - T0 ))s; logs in $LOGS)"
printf '%-42s %-10s %s\n' "step" "result" "detail"
for r in "${ROWS[@]}"; do
  IFS='|' read -r step result detail <<<"$r"
  printf '%-42s %-10s %s\n' "$step" "$result" "$detail"
done
if [[ $FAILED -eq 0 && "${verdict:-ok}" == SKIPPED ]]; then
  exit 2
fi
exit $FAILED
