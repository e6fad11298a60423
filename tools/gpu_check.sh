#!/usr/bin/env bash
# gpu_check.sh — the GPU check of remat's CUDA backend in one run, for a machine with an NVIDIA
# GPU, nvcc, CMake and ninja but no Bazel and no network (the device machine of these sessions,
# lent for 15 minutes, machine start included):
#   1. configures remat with CMake (-DREMAT_CUDA=ON, sm_90 unless CUDA_ARCH says otherwise) and
#      builds the CUDA tests and bench/memory_vs_recompute with ninja -j$JOBS;
#   2. runs every CUDA test binary (tests/**/cuda/**; one line each in cuda_tests.txt);
#   3. bench/torch_reference.py --device cuda, if python3 has torch (its JSON is then compared);
#   4. bench/memory_vs_recompute --device cuda at its default configuration (results.json and
#      SVG plots in the output folder), and bench/ops --device cuda once such a bench exists;
#      then the offload check: the CUDA offload test's own row (it ran in 2), and
#      memory_vs_recompute --device cuda --sweep 4 --offload $OFFLOAD (default 64MiB; one
#      measured step per plan): each offload plan's measured device peak against its prediction,
#      the link's bandwidth as priced; then a bf16 Llama (debugmodel) under none, full and
#      sac-titan: its allocated and reserved peaks, segments and activations against the dry run's;
#   5. the CPU tests, built and run in parallel, if the time spent so far leaves room
#      (CPU_TESTS=auto|yes|no);
#   6. prints a summary table (also written to summary.txt).
# Third-party headers (Eigen, Catch2 v2, nlohmann/json): the system's, else third_party_local/
# (fill it with tools/vendor_headers.sh where they exist and carry the git-ignored folder:
# carry=["third_party_local"]). CMake says which it used (see the "headers" row).
#
# Outputs: $OUT when set (the device tool's folder), else $BUILD/logs. A rerun on the same machine
# reuses the build folder (build/gpu, git-ignored). Time: the build and the CUDA tests always run
# (bounded by timeouts); the optional steps (PyTorch, CPU tests) run only while they fit in
# DEADLINE seconds (default 360), so give the run about DEADLINE + 60 s. Expected on 16 cores:
# build 1-3 min, CUDA tests and the benchmark 1-2 min, CPU tests (build + run) about 2 min.
# Exit status: 1 if anything failed, 2 if nothing failed but CUDA tests skipped for lack of a
# device, else 0.
#
# Usage: tools/gpu_check.sh   (env: JOBS=16 CUDA_ARCH=90 CPU_TESTS=auto DEADLINE=360
#                              REMAT_GPU_BUILD=build/gpu OFFLOAD=64MiB)
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD="${REMAT_GPU_BUILD:-build/gpu}"
LOGS="${OUT:-$BUILD/logs}"
JOBS="${JOBS:-16}"
CUDA_ARCH="${CUDA_ARCH:-90}"
CPU_TESTS="${CPU_TESTS:-auto}"
DEADLINE="${DEADLINE:-360}"
OFFLOAD="${OFFLOAD:-64MiB}"
mkdir -p "$LOGS"

ROWS=()  # "step|result|detail"
FAILED=0
SKIPPED_FOR_DEVICE=0
row() { ROWS+=("$1|$2|$3"); }
fail() { FAILED=1; row "$1" "FAILED" "$2"; }
# A results.json check's verdict ("ok|detail" or "FAILED|detail", printed by its Python) as a row
# named $1 whose detail starts with $2. Anything else means the check could not read the file: a
# row "ok" when $4 is ok (the step ran; only its check is lost), else a failure.
verdict_row() {
  local name=$1 prefix=$2 verdict=$3 unread=$4
  if [[ "$verdict" == ok\|* || "$verdict" == FAILED\|* ]]; then
    [[ "$verdict" == FAILED\|* ]] && FAILED=1
    row "$name" "${verdict%%|*}" "$prefix: ${verdict#*|}"
  elif [[ "$unread" == ok ]]; then
    row "$name" "ok" "$prefix; results.json not checked: $(echo "$verdict" | tail -n 1)"
  else
    fail "$name" "results.json not read: $(echo "$verdict" | tail -n 1)"
  fi
}
now() { date +%s; }
T0=$(now)
elapsed() { echo $(( $(now) - T0 )); }
time_left() { echo $(( DEADLINE - $(elapsed) )); }
section() { echo "== $* ($(elapsed)s)"; }

# Prints the table (stdout and summary.txt).
summary() {
  {
    echo
    echo "== remat GPU check: $(elapsed)s; logs in $LOGS"
    printf '%-36s %-8s %s\n' "step" "result" "detail"
    for r in "${ROWS[@]}"; do
      IFS='|' read -r step result detail <<<"$r"
      printf '%-36s %-8s %s\n' "$step" "$result" "$detail"
    done
  } | tee "$LOGS/summary.txt"
}

# A Catch2 v2 binary's result: "cases failed" from its last summary line ("All tests passed
# (A assertions in N test cases)" or "test cases: N | P passed | F failed"); empty if none.
catch2_counts() {
  local summary
  summary=$(grep -E '^(All tests passed|test cases:)' "$1" | tail -n 1)
  if [[ "$summary" =~ ^All\ tests\ passed.*in\ ([0-9]+)\ test\ case ]]; then
    echo "${BASH_REMATCH[1]} 0"
  elif [[ "$summary" =~ ^test\ cases:\ ([0-9]+) ]]; then
    local n=${BASH_REMATCH[1]} f=0
    [[ "$summary" =~ \|\ ([0-9]+)\ failed ]] && f=${BASH_REMATCH[1]}
    echo "$n $f"
  fi
}

# ---- 0. the machine -------------------------------------------------------------------------
GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
NVCC=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -n 1)
row "machine" "${GPU:+ok}${GPU:-no GPU}" \
    "${GPU:+$GPU; }nvcc ${NVCC:-missing}, cmake $(cmake --version 2>/dev/null | head -n 1 | awk '{print $3}'), $(nproc) cores"
nvidia-smi >"$LOGS/nvidia-smi.txt" 2>&1

# ---- 1. configure and build -----------------------------------------------------------------
section "configure and build ($BUILD, -j$JOBS)"
build_ok=0
t=$(now)
if cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREMAT_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" >"$LOGS/configure.log" 2>&1; then
  headers=$(grep -o 'third-party headers from .*' "$LOGS/configure.log" | tail -n 1 | sed 's/third-party headers from //')
  blas=$(grep -o 'remat: OpenBLAS.*' "$LOGS/configure.log" | tail -n 1 | sed 's/remat: //')
  row "headers" "ok" "${headers:-?}; ${blas:-?}"
  # The CUDA tests and the benchmark first: what the GPU is needed for.
  if timeout $(( DEADLINE - 60 )) ninja -C "$BUILD" -j "$JOBS" remat_cuda_tests bench_memory_vs_recompute \
      $(grep -qs -- '--device' bench/ops.cpp && echo bench_ops) >"$LOGS/build.log" 2>&1; then
    build_ok=1
    row "build" "ok" "$(( $(now) - t ))s, sm_$CUDA_ARCH, $(grep -c 'Building' "$LOGS/build.log") files compiled"
  else
    fail "build" "ninja failed or timed out after $(( $(now) - t ))s (see build.log)"
    grep -E -A3 'error|FAILED' "$LOGS/build.log" | head -n 40
  fi
else
  fail "configure" "cmake failed (see configure.log)"
  tail -n 20 "$LOGS/configure.log"
fi

# ---- 2. CUDA tests --------------------------------------------------------------------------
if [[ $build_ok -eq 1 ]]; then
  section "CUDA tests"
  mapfile -t TESTS < <(find "$BUILD/tests" -path '*/cuda/*' -type f -perm -u+x -name '*_test' | sort)
  : >"$LOGS/cuda_tests.txt"  # one line per binary; the table shows only the failures
  total_cases=0 total_failed=0 bad=0 skipped_binaries=0
  t_all=$(now)
  for bin in "${TESTS[@]}"; do
    name="${bin#"$BUILD"/tests/}"
    log="$LOGS/test_${name//\//_}.log"
    t=$(now)
    timeout 90 "$bin" >"$log" 2>&1
    rc=$?
    secs=$(( $(now) - t ))
    read -r n nfail < <(catch2_counts "$log"; echo)
    skips=$(grep -c 'no CUDA device: skipped' "$log")
    [[ $skips -gt 0 ]] && skipped_binaries=$((skipped_binaries + 1))
    if [[ -z "${n:-}" ]]; then
      bad=$((bad + 1))
      fail "$name" "crashed or timed out (exit $rc, ${secs}s)"
      tail -n 20 "$log"
      printf '%-36s exit %-3s crashed or timed out %4ss\n' "$name" "$rc" "$secs" >>"$LOGS/cuda_tests.txt"
      continue
    fi
    total_cases=$((total_cases + n))
    total_failed=$((total_failed + nfail))
    if [[ $nfail -gt 0 ]]; then
      bad=$((bad + 1))
      fail "$name" "$nfail of $n cases failed, ${secs}s"
      grep -B 2 -A 12 -E 'FAILED:' "$log" | head -n 40
    elif [[ $rc -ne 0 ]]; then
      bad=$((bad + 1))
      fail "$name" "exit $rc after all $n cases passed"
    fi
    printf '%-36s exit %-3s %3s cases %3s failed %3s skipped %4ss\n' "$name" "$rc" "$n" "$nfail" "$skips" "$secs" \
        >>"$LOGS/cuda_tests.txt"
  done
  verdict=ok
  if [[ $skipped_binaries -gt 0 ]]; then verdict=SKIPPED; SKIPPED_FOR_DEVICE=1; fi
  [[ $bad -gt 0 ]] && verdict=FAILED
  row "CUDA tests (all)" "$verdict" "${#TESTS[@]} binaries ($bad bad), $total_cases cases, $total_failed failed, $(( $(now) - t_all ))s$([[ $skipped_binaries -gt 0 ]] && echo "; SKIPPED (no device) in $skipped_binaries binaries")"
fi

# ---- 3. the PyTorch reference (for the comparison in 4) --------------------------------------
TORCH_JSON=""
if [[ $build_ok -eq 1 && -n "$GPU" ]]; then
  if ! python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    row "torch_reference" "skipped" "python3 has no torch with CUDA"
  elif [[ $(time_left) -lt 150 ]]; then
    row "torch_reference" "skipped" "out of time ($(elapsed)s spent)"
  else
    section "bench/torch_reference.py --device cuda"
    t=$(now)
    if timeout 90 python3 bench/torch_reference.py --device cuda --out "$LOGS/torch_cuda.json" \
        >"$LOGS/torch_reference.log" 2>&1; then
      TORCH_JSON="$LOGS/torch_cuda.json"
      row "torch_reference" "ok" "$(( $(now) - t ))s, torch $(python3 -c 'import torch; print(torch.__version__)')"
    else
      fail "torch_reference" "exit $? after $(( $(now) - t ))s (see torch_reference.log)"
      tail -n 20 "$LOGS/torch_reference.log"
    fi
  fi
fi

# ---- 4. benchmarks on the GPU ---------------------------------------------------------------
if [[ $build_ok -eq 1 ]]; then
  if [[ -z "$GPU" ]]; then
    row "benchmarks" "skipped" "no GPU"
  else
    section "bench/memory_vs_recompute --device cuda"
    t=$(now)
    # stderr: a progress bar; the table and the comparison go to stdout.
    if timeout 120 "$BUILD/bench/memory_vs_recompute" --device cuda --out "$LOGS/memory_vs_recompute" \
        ${TORCH_JSON:+--compare "$TORCH_JSON"} >"$LOGS/bench_memory_vs_recompute.log" \
        2>"$LOGS/bench_memory_vs_recompute.stderr"; then
      row "bench memory_vs_recompute" "ok" "$(( $(now) - t ))s, default config${TORCH_JSON:+, compared with PyTorch}"
      cat "$LOGS/bench_memory_vs_recompute.log"
    else
      fail "bench memory_vs_recompute" "exit $? after $(( $(now) - t ))s (see bench_memory_vs_recompute.*)"
      tail -n 20 "$LOGS/bench_memory_vs_recompute.log" "$LOGS/bench_memory_vs_recompute.stderr"
    fi
    if [[ ! -f bench/ops.cpp ]]; then
      row "bench ops" "skipped" "no bench/ops.cpp in this tree"
    elif ! grep -q -- '--device' bench/ops.cpp; then
      row "bench ops" "skipped" "bench/ops.cpp measures the CPU only (no --device)"
    elif [[ ! -x "$BUILD/bench/ops" ]]; then
      fail "bench ops" "not built (OpenBLAS missing? see configure.log)"
    else
      section "bench/ops --device cuda"
      t=$(now)
      if timeout 120 "$BUILD/bench/ops" --device cuda >"$LOGS/bench_ops.log" 2>&1; then
        row "bench ops" "ok" "$(( $(now) - t ))s"
        tail -n 40 "$LOGS/bench_ops.log"
      else
        fail "bench ops" "exit $? after $(( $(now) - t ))s (see bench_ops.log)"
        tail -n 20 "$LOGS/bench_ops.log"
      fi
    fi
  fi
fi

# ---- 4b. offload: the CUDA offload test and the two frontiers, measured -----------------------
if [[ $build_ok -eq 1 ]]; then
  # The test binary ran with the other CUDA tests (step 2); its line, or why there is none.
  offload_line=$(grep -E '^checkpoint/cuda/offload_test ' "$LOGS/cuda_tests.txt" 2>/dev/null)
  if [[ -z "$offload_line" ]]; then
    fail "offload test" "tests/checkpoint/cuda/offload_test was not built or not run (see cuda_tests.txt)"
  elif [[ "$offload_line" =~ exit\ 0\ +([0-9]+)\ cases\ +0\ failed\ +([0-9]+)\ skipped ]]; then
    if [[ ${BASH_REMATCH[2]} -gt 0 ]]; then
      row "offload test" "SKIPPED" "${BASH_REMATCH[1]} cases, ${BASH_REMATCH[2]} skipped (no device)"
    else
      row "offload test" "ok" "${BASH_REMATCH[1]} cases (bitwise gradients, exact device and host peaks)"
    fi
  else
    row "offload test" "FAILED" "$(echo "$offload_line" | tr -s ' ')"  # counted in the CUDA tests' row
  fi
  if [[ -z "$GPU" ]]; then
    row "bench offload" "skipped" "no GPU"
  elif [[ $(time_left) -lt 90 ]]; then
    row "bench offload" "skipped" "out of time ($(elapsed)s spent)"
  else
    section "bench/memory_vs_recompute --device cuda --sweep 4 --offload $OFFLOAD"
    t=$(now)
    left=$(time_left)
    if timeout "$(( left > 150 ? 120 : left - 30 ))" "$BUILD/bench/memory_vs_recompute" --device cuda --steps 1 \
        --warmup 1 --sweep 4 --offload "$OFFLOAD" --no-interleave --out "$LOGS/memory_vs_recompute_offload" \
        >"$LOGS/bench_offload.log" 2>"$LOGS/bench_offload.stderr"; then
      # Each offload plan's measured device peak against its prediction, exactly (results.json).
      verdict=$(python3 - "$LOGS/memory_vs_recompute_offload/results.json" 2>&1 <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["offload"]
rows = o["rows"]
off = [r["offload"] for r in rows]
bad = [r["plan"] for r in off if r.get("measured_peak_bytes") != r["predicted_peak_bytes"]]
saved = sum(1 for r in rows if "keep_recompute" in r and r["offload"]["cost_seconds"] < r["keep_recompute"]["cost_seconds"])
print(("FAILED" if bad else "ok") + "|%d budgets, measured device peak %s predicted%s; offload cheaper at %d; "
      "link at %.1f GB/s, %s (the datasheet's: %.1f); %s" % (len(rows), "!=" if bad else "==",
      (" at " + ",".join(bad)) if bad else "", saved, o["host_link_bandwidth"] / 1e9, o.get("host_link_source", "?"),
      o.get("host_link_datasheet_bandwidth", 0) / 1e9, o["caveat"]))
PY
)
      verdict_row "bench offload" "$(( $(now) - t ))s, --offload $OFFLOAD" "$verdict" ok
      sed -n '/^keep\/recompute against keep\/recompute\/offload/,/^host peak/p' "$LOGS/bench_offload.log" | head -n 24
    else
      fail "bench offload" "exit $? after $(( $(now) - t ))s (see bench_offload.*)"
      tail -n 20 "$LOGS/bench_offload.log" "$LOGS/bench_offload.stderr"
    fi
  fi
fi

# ---- 4c. a Llama on the GPU (issue 42): its measured peaks against the dry run's predictions ---
# torchtitan's debugmodel (6 layers, dim 256, 16 heads, vocabulary 2048) in bf16 at sequence 128,
# batch 8 under none, full and sac-titan: allocated, reserved, segments and activation bytes each
# measured on the device against the same step dry-run on Meta counting like CUDA's allocator (what
# docs/benchmarks.md predicts for Llama 3 8B). On the emulated device this is 4 minutes of CPU.
if [[ $build_ok -eq 1 ]]; then
  if [[ -z "$GPU" ]]; then
    row "bench llama" "skipped" "no GPU"
  elif [[ $(time_left) -lt 60 ]]; then
    row "bench llama" "skipped" "out of time ($(elapsed)s spent)"
  else
    section "bench/memory_vs_recompute --device cuda --model llama --config debugmodel --dtype bf16"
    t=$(now)
    if timeout 90 "$BUILD/bench/memory_vs_recompute" --device cuda --model llama --config debugmodel --dtype bf16 \
        --strategies none,full,sac-titan --steps 2 --warmup 1 --no-timeline --no-interleave \
        --out "$LOGS/memory_vs_recompute_llama" >"$LOGS/bench_llama.log" 2>"$LOGS/bench_llama.stderr"; then
      verdict=$(python3 - "$LOGS/memory_vs_recompute_llama/results.json" 2>&1 <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
pairs = [("peak_bytes", "predicted_peak_bytes"), ("peak_reserved_bytes", "predicted_peak_reserved_bytes"),
         ("segments", "predicted_segments"), ("activation_bytes", "predicted_activation_bytes")]
bad = ["%s %s %s != %s" % (r["strategy"], m, r[m], r[p]) for r in rows for m, p in pairs if r[m] != r[p]]
print(("FAILED|" + "; ".join(bad)) if bad else
      "ok|%d strategies, allocated, reserved, segments and activations == predicted (%s)" %
      (len(rows), ", ".join("%s %.1f MiB" % (r["strategy"], r["peak_bytes"] / 2**20) for r in rows)))
PY
)
      verdict_row "bench llama" "$(( $(now) - t ))s, bf16 debugmodel" "$verdict" failed
      grep -A4 '^strategy' "$LOGS/bench_llama.log"
    else
      fail "bench llama" "exit $? after $(( $(now) - t ))s (see bench_llama.*)"
      tail -n 20 "$LOGS/bench_llama.log" "$LOGS/bench_llama.stderr"
    fi
  fi
fi

# ---- 5. CPU tests (in a CUDA build, with the device present) ---------------------------------
if [[ $build_ok -eq 1 ]]; then
  if [[ "$CPU_TESTS" == no ]]; then
    row "CPU tests" "skipped" "CPU_TESTS=no"
  elif [[ "$CPU_TESTS" == auto && $(time_left) -lt 150 ]]; then
    row "CPU tests" "skipped" "out of time ($(elapsed)s spent; CPU_TESTS=yes forces them)"
  else
    section "CPU tests"
    t=$(now)
    left=$(time_left)
    if timeout "$(( left > 165 ? left - 45 : 120 ))" ninja -C "$BUILD" -j "$JOBS" remat_cpu_tests \
        >"$LOGS/build_cpu_tests.log" 2>&1; then
      # ctest runs them in parallel; -LE cuda: the CUDA tests ran above.
      left=$(time_left)
      (cd "$BUILD" && timeout "$(( left > 60 ? left : 60 ))" ctest -LE cuda -j "$JOBS" --timeout 60) >"$LOGS/ctest_cpu.log" 2>&1
      rc=$?
      result=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$LOGS/ctest_cpu.log" | tail -n 1)
      if [[ $rc -eq 0 ]]; then
        row "CPU tests" "ok" "$(( $(now) - t ))s (build included): $result"
      else
        fail "CPU tests" "$(( $(now) - t ))s: ${result:-ctest exit $rc} (see ctest_cpu.log)"
        sed -n '/The following tests FAILED/,$p' "$LOGS/ctest_cpu.log" | head -n 20
      fi
    else
      fail "CPU tests" "build failed or timed out after $(( $(now) - t ))s (see build_cpu_tests.log)"
    fi
  fi
fi

# ---- 6. summary -----------------------------------------------------------------------------
summary
if [[ $FAILED -ne 0 ]]; then
  exit 1
elif [[ $SKIPPED_FOR_DEVICE -ne 0 ]]; then
  exit 2
fi
exit 0
