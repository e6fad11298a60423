#!/usr/bin/env bash
# benchmark_report.sh — regenerates docs/benchmarks.md, the charts in docs/ and the README's
# benchmark table from one run on this machine (no PyTorch counterpart). Nothing in them is typed
# by hand: every figure comes from this run's results files.
#
# The run:
#   1. records the machine (lscpu model name and flags, cores), the date, the compiler, remat's
#      commit and its BLAS/oneDNN packages, and the PyTorch it compares with (version, BLAS, oneDNN);
#   2. builds //bench:memory_vs_recompute;
#   3. ROUNDS rounds; in each, remat (every strategy, each one step in turn, and the planner's
#      sweep with the plans at each strategy's peak) and bench/torch_reference.py on the same GPT,
#      f32, then both again in bf16 (none, full, sac-mm); odd rounds run PyTorch first, even rounds
#      remat first, so that a slow spell of a shared machine does not always hit the same side;
#   4. one dry run of a GPT-2 XL step (predictions only, on the Meta device), and GPT-2 XL at batch
#      8 on a GPU: dry runs counting like CUDA (allocated and reserved bytes, segments) for five
#      strategies, and plans for an 80 GB and a 141 GB device; Llama 3 8B (torchtitan's
#      llama3_8b, bf16, sequence 8192, batch 1) on one H200 the same way, every strategy, and plans
#      for 60, 80 and 141 GB;
#   5. tools/benchmark_report.py: medians over the rounds with their spread (min-max), one timing
#      table per comparison, into docs/benchmarks.md; round 1's charts into docs/; the README's
#      table between its `benchmark-table` markers, and its GPU prediction between its
#      `gpu-dry-run` markers.
# Every command it runs is logged and listed in docs/benchmarks.md.
#
# PyTorch: from PyPI, in a virtual environment of its own (created when missing; CI never needs
# it). Without network and without the venv, the PyTorch tables are left out.
#
# Usage: tools/benchmark_report.sh
#   env: REMAT_BENCH_ROUNDS=3  REMAT_BENCH_THREADS=1  REMAT_BENCH_CLOCK=cpu|wall
#        REMAT_TORCH_VENV=~/.cache/remat/torch-venv  REMAT_BENCH_WORK=<a fresh temporary folder>
#        REMAT_BENCH_SWEEP=6  REMAT_BENCH_NO_TORCH=1 (remat only)
#        REMAT_BENCH_ONLY=gpu-dry-run (only step 4's GPU prediction, and only the README's block of it:
#        about a minute)
#        REMAT_BENCH_ONLY=llama3-8b (only step 4's Llama 3 8B prediction, and only its section of
#        docs/benchmarks.md: about two minutes)
#        REMAT_BENCH_MODEL="--layers 1 --embd 32 --heads 2 --seq 16 --batch 2" (another model, both sides;
#        default: the benchmark's GPT)
# Time: about 10 minutes a round on a 2-core machine under load (one thread), plus the PyTorch
# install the first time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS="${REMAT_BENCH_ROUNDS:-3}"
THREADS="${REMAT_BENCH_THREADS:-1}"
CLOCK="${REMAT_BENCH_CLOCK:-cpu}"
SWEEP="${REMAT_BENCH_SWEEP:-6}"
VENV="${REMAT_TORCH_VENV:-$HOME/.cache/remat/torch-venv}"
WORK="${REMAT_BENCH_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/remat-bench.XXXXXX")}"
BF16_STRATEGIES="none,full,sac-mm"
ONLY="${REMAT_BENCH_ONLY:-}"
[[ -z "$ONLY" || "$ONLY" == gpu-dry-run || "$ONLY" == llama3-8b ]] || {
  echo "benchmark_report: REMAT_BENCH_ONLY must be gpu-dry-run or llama3-8b, got '$ONLY'" >&2; exit 2; }
read -r -a MODEL <<<"${REMAT_BENCH_MODEL:-}"
mkdir -p "$WORK"
COMMANDS="$WORK/commands.txt"
: >"$COMMANDS"
T0=$(date +%s)

say() { echo "benchmark_report: $*" >&2; }

# The command line as one would type it: arguments with spaces or shell characters single-quoted.
quoted() {
  local a out=()
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./=:,@%+-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/\'\\\'\'}'"); fi
  done
  echo "${out[*]}"
}

# run LOG CMD...: runs CMD with its output in $WORK/LOG, and lists it in commands.txt.
# RUN_MAY_FAIL=1 run ...: an exit 1 is a result (a budget no plan fits), kept in the log.
run() {
  local log="$1" start rc=0
  shift
  start=$(date +%s)
  quoted "$@" >>"$COMMANDS"
  say "[$(( start - T0 ))s] $(quoted "$@")"
  "$@" >"$WORK/$log" 2>&1 || rc=$?
  [[ $rc -eq 1 && "${RUN_MAY_FAIL:-}" == 1 ]] && { say "exit 1 (kept: $WORK/$log)"; return 0; }
  if [[ $rc -ne 0 ]]; then
    say "failed (exit $rc): $*; its output:"
    tail -n 30 "$WORK/$log" >&2
    exit "$rc"
  fi
}

# --- 1. the machine --------------------------------------------------------------------------
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
  echo "flags=$(lscpu | sed -n 's/^Flags:[[:space:]]*//p' | head -n 1)"
  echo "cores=$(nproc)"
  echo "threads_per_core=$(lscpu | sed -n 's/^Thread(s) per core:[[:space:]]*//p' | head -n 1)"
  echo "kernel=$(uname -sr)"
  echo "compiler=$(g++ --version | head -n 1)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "openblas=$(dpkg-query -W -f='${Version}' libopenblas0-openmp 2>/dev/null || echo unknown)"
  echo "onednn=$(dpkg-query -W -f='${Version}' libdnnl-dev 2>/dev/null || echo unknown)"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "rounds=$ROUNDS"
  echo "threads=$THREADS"
  echo "clock=$CLOCK"
} >"$WORK/machine.txt"

# --- 2. PyTorch and the build ----------------------------------------------------------------
TORCH=""
[[ -n "$ONLY" ]] && REMAT_BENCH_NO_TORCH=1
if [[ -z "${REMAT_BENCH_NO_TORCH:-}" ]]; then
  if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    say "installing PyTorch from PyPI into $VENV (once)"
    if python3 -m venv "$VENV" >"$WORK/venv.log" 2>&1 &&
      "$VENV/bin/pip" install torch numpy >>"$WORK/venv.log" 2>&1; then
      printf '%s\n' "python3 -m venv $VENV && $VENV/bin/pip install torch numpy" >>"$COMMANDS"
    else
      say "could not install PyTorch (see $WORK/venv.log): its tables are left out"
    fi
  fi
  if "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    TORCH="$VENV/bin/python"
    run torch_config.txt "$TORCH" -c 'import torch; print("version=" + torch.__version__); print("capability=" + torch.backends.cpu.get_cpu_capability()); print(torch.__config__.show())'
  fi
fi

run build.log ./bazelw build //bench:memory_vs_recompute
BENCH=bazel-bin/bench/memory_vs_recompute
export OMP_NUM_THREADS="$THREADS"

# --- 3. the rounds ---------------------------------------------------------------------------
remat_f32() {
  run "r$1/remat-f32.txt" "$BENCH" ${MODEL[@]+"${MODEL[@]}"} --clock "$CLOCK" --sweep "$SWEEP" --sweep-at-strategies --out "$WORK/r$1/remat-f32"
}
remat_bf16() {
  run "r$1/remat-bf16.txt" "$BENCH" ${MODEL[@]+"${MODEL[@]}"} --clock "$CLOCK" --dtype bf16 --strategies "$BF16_STRATEGIES" --no-timeline \
    --no-interleave --out "$WORK/r$1/remat-bf16"
}
torch_f32() {
  [[ -n "$TORCH" ]] || return 0
  run "r$1/torch-f32.txt" "$TORCH" bench/torch_reference.py ${MODEL[@]+"${MODEL[@]}"} --threads "$THREADS" --clock "$CLOCK" \
    --out "$WORK/r$1/torch-f32.json"
}
torch_bf16() {
  [[ -n "$TORCH" ]] || return 0
  run "r$1/torch-bf16.txt" "$TORCH" bench/torch_reference.py ${MODEL[@]+"${MODEL[@]}"} --threads "$THREADS" --clock "$CLOCK" --dtype bf16 \
    --strategies "$BF16_STRATEGIES" --out "$WORK/r$1/torch-bf16.json"
}
[[ -n "$ONLY" ]] && ROUNDS=0
for ((r = 1; r <= ROUNDS; ++r)); do
  mkdir -p "$WORK/r$r"
  if ((r % 2 == 1)); then
    torch_f32 "$r"; remat_f32 "$r"; torch_bf16 "$r"; remat_bf16 "$r"
  else
    remat_f32 "$r"; torch_f32 "$r"; remat_bf16 "$r"; torch_bf16 "$r"
  fi
done

# --- 4. a model too large to run here, predicted --------------------------------------------
if [[ -z "$ONLY" ]]; then
  run gpt2xl.txt "$BENCH" --dry-run --no-timeline --layers 48 --embd 1600 --heads 25 --seq 1024 --batch 4 --vocab 50257 \
    --out "$WORK/gpt2xl"
fi
# On a GPU: the same model at batch 8, counted like CUDA's caching allocator, and two budgets.
if [[ "$ONLY" != llama3-8b ]]; then
  GPU_XL=(--dry-run --device cuda --no-timeline --layers 48 --embd 1600 --heads 25 --seq 1024 --vocab 50257 --batch 8)
  run gpt2xl-cuda.txt "$BENCH" "${GPU_XL[@]}" --strategies none,full,every2,sac-titan,sac-megatron --out "$WORK/gpt2xl-cuda"
  for budget in 80GB 141GB; do
    run "gpt2xl-cuda-$budget.txt" "$BENCH" "${GPU_XL[@]}" --strategies none --budget "$budget" --out "$WORK/gpt2xl-cuda-$budget"
  done
fi
# Llama 3 8B on one H200 (141 GB), as torchtitan trains it: every strategy, and three budgets (the
# math attention: remat's fused CUDA attention takes f32 only).
if [[ "$ONLY" != gpu-dry-run ]]; then
  LLAMA_8B=(--dry-run --device cuda --no-timeline --model llama --config llama3_8b --dtype bf16 --seq 8192 --batch 1)
  run llama3-8b-cuda.txt "$BENCH" "${LLAMA_8B[@]}" --out "$WORK/llama3-8b-cuda"
  for budget in 60GB 80GB 141GB; do
    RUN_MAY_FAIL=1 run "llama3-8b-cuda-$budget.txt" "$BENCH" "${LLAMA_8B[@]}" --strategies none --budget "$budget" \
      --out "$WORK/llama3-8b-cuda-$budget"
  done
fi

# --- 5. the report ---------------------------------------------------------------------------
echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$WORK/machine.txt"
echo "seconds=$(( $(date +%s) - T0 ))" >>"$WORK/machine.txt"
if [[ "$ONLY" == gpu-dry-run ]]; then
  python3 tools/benchmark_report.py "$WORK" --readme README.md --only gpu-dry-run
  say "wrote README.md's GPU prediction in $(( $(date +%s) - T0 )) s (results in $WORK)"
elif [[ "$ONLY" == llama3-8b ]]; then
  python3 tools/benchmark_report.py "$WORK" --docs docs --only llama3-8b
  say "wrote docs/benchmarks.md's Llama 3 8B section in $(( $(date +%s) - T0 )) s (results in $WORK)"
else
  python3 tools/benchmark_report.py "$WORK" --docs docs --readme README.md
  say "wrote docs/benchmarks.md, docs/*.svg and README.md's table in $(( $(date +%s) - T0 )) s (results in $WORK)"
fi
