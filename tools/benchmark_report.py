#!/usr/bin/env python3
"""docs/benchmarks.md from one run of tools/benchmark_report.sh (no PyTorch counterpart).

Reads the run's folder (machine.txt, torch_config.txt, commands.txt and, per round rN/,
remat-f32/results.json, remat-bf16/results.json, torch-f32.json, torch-bf16.json; gpt2xl/results.json)
and writes:
  - docs/benchmarks.md: the machine, the date, every command, the PyTorch compared with, and one
    table per comparison, each timing the median over the rounds with its spread (min-max);
  - docs/memory_vs_flops.svg and docs/timeline_{none,full,sac-mm}.svg: round 1's charts (memory and
    recomputed FLOPs only: they do not move from round to round);
  - README.md: the table between its `benchmark-table` markers, and GPT-2 XL on a GPU predicted
    (gpt2xl-cuda/, gpt2xl-cuda-80GB/, gpt2xl-cuda-141GB/) between its `gpu-dry-run` markers.
Standard library only.

  python3 tools/benchmark_report.py WORK --docs docs --readme README.md
  python3 tools/benchmark_report.py WORK --readme README.md --only gpu-dry-run
"""
import argparse
import json
import os
import re
import shutil
import statistics
import sys
import textwrap

MIB = 2**20
GIB = 2**30
CHARTS = ["memory_vs_flops.svg", "timeline_none.svg", "timeline_full.svg", "timeline_sac-mm.svg"]
README_STRATEGIES = ["none", "full", "every2", "sac-mm", "sac-titan"]
BF16_STRATEGIES = "none, full, sac-mm"
BEGIN = "<!-- benchmark-table: written by tools/benchmark_report.sh from docs/benchmarks.md's run -->"
END = "<!-- /benchmark-table -->"
GPU_BEGIN = "<!-- gpu-dry-run: written by tools/benchmark_report.sh -->"
GPU_END = "<!-- /gpu-dry-run -->"
GPU_BUDGETS = ["80GB", "141GB"]
LLAMA_BEGIN = "<!-- llama3-8b: written by tools/benchmark_report.sh -->"
LLAMA_END = "<!-- /llama3-8b -->"
LLAMA_BUDGETS = ["60GB", "80GB", "141GB"]


def read_kv(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                out.setdefault(k, v)
    return out


def load(path):
    return json.load(open(path)) if os.path.exists(path) else None


def spread(values, fmt="{:.1f}", unit="", sep="–"):
    """'m' when every round gave the same, else 'median (min-max)'."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    m = statistics.median(values)
    lo, hi = min(values), max(values)
    if fmt.format(lo) == fmt.format(hi):
        return fmt.format(m) + unit
    return f"{fmt.format(m)}{unit} ({fmt.format(lo)}{sep}{fmt.format(hi)})"


def pct(values):
    return spread([v * 100 for v in values], "{:+.0f}", "%", " to ")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def by_name(doc, key="results"):
    return {r["strategy"]: r for r in (doc or {}).get(key, [])}


def mib(b):
    return f"{b / MIB:.1f}"


class Run:
    def __init__(self, work):
        self.work = work
        self.machine = read_kv(os.path.join(work, "machine.txt"))
        self.rounds = int(self.machine.get("rounds", "0"))
        self.torch_cfg = open(os.path.join(work, "torch_config.txt")).read() if os.path.exists(
            os.path.join(work, "torch_config.txt")) else ""
        self.commands = [c.rstrip("\n") for c in open(os.path.join(work, "commands.txt"))]
        r = range(1, self.rounds + 1)
        self.remat = [load(os.path.join(work, f"r{i}", "remat-f32", "results.json")) for i in r]
        self.remat_bf16 = [load(os.path.join(work, f"r{i}", "remat-bf16", "results.json")) for i in r]
        self.torch = [load(os.path.join(work, f"r{i}", "torch-f32.json")) for i in r]
        self.torch_bf16 = [load(os.path.join(work, f"r{i}", "torch-bf16.json")) for i in r]
        self.gpt2xl = load(os.path.join(work, "gpt2xl", "results.json"))
        if not self.rounds or any(d is None for d in self.remat):
            sys.exit(f"benchmark_report.py: {work} has no complete remat rounds")

    def torch_field(self, pattern):
        m = re.search(pattern, self.torch_cfg, re.M)
        return m.group(1).strip() if m else None


def config_line(cfg):
    return (f"GPT: {cfg['layers']} layers, d_model {cfg['embd']}, {cfg['heads']} heads, sequence {cfg['seq']}, "
            f"batch {cfg['batch']}, vocabulary {cfg['vocab']}, {cfg['dtype']}, {cfg['device']}, AdamW (fused); "
            f"{cfg['steps']} measured steps after {cfg['warmup']} warm-up")


def memory_rows(run, names=None):
    """Predicted beside measured, from round 1, with a check that every round measured the same."""
    first = by_name(run.remat[0])
    rows = []
    for name, r in first.items():
        if names and name not in names:
            continue
        same = all(by_name(d)[name]["peak_bytes"] == r["peak_bytes"] and
                   by_name(d)[name]["activation_bytes"] == r["activation_bytes"] for d in run.remat)
        exact = r["peak_bytes"] == r["predicted_peak_bytes"] and r["activation_bytes"] == r["predicted_activation_bytes"]
        rows.append((name, r, same, exact))
    return rows


def overheads(run, name):
    """Per round: the in-turn step time against none's in the same round."""
    out = []
    for d in run.remat:
        s = by_name(d)
        if "interleaved_ms" in s.get(name, {}) and "interleaved_ms" in s.get("none", {}):
            out.append(s[name]["interleaved_ms"] / s["none"]["interleaved_ms"] - 1)
    return out


def readme_table(run):
    rows = []
    for name, r, same, exact in memory_rows(run, README_STRATEGIES):
        rows.append([f"`{name}`", mib(r["predicted_peak_bytes"]), mib(r["peak_bytes"]),
                     mib(r["predicted_activation_bytes"]), mib(r["activation_bytes"]),
                     f"{r['recomputed_flops_per_step'] / 1e9:.2f}", pct(overheads(run, name))])
    header = ["strategy", "peak MiB predicted", "measured", "activations MiB predicted", "measured",
              "recomputed GFLOP", "step time vs `none`"]
    cfg = run.remat[0]["config"]
    note = (f"{config_line(cfg)}; {run.machine.get('model', '?')}, {threads_text(run)}; step time: every strategy "
            f"one step in turn, the median over {run.rounds} rounds (min–max). From [docs/benchmarks.md]"
            f"(docs/benchmarks.md), which has every strategy, the planner and PyTorch.")
    return table(header, rows) + "\n\n" + note


def threads_text(run):
    t = run.machine.get("threads", "1")
    clock = run.machine.get("clock", "wall")
    threads = "one thread" if t == "1" else f"{t} threads"
    return threads + (", process CPU time" if clock == "cpu" else ", wall clock")


def comparison(run, ours, theirs, label):
    """remat beside PyTorch, round by round (each round ran both, in alternating order)."""
    rounds = [(o, t) for o, t in zip(ours, theirs) if o and t]
    if not rounds:
        return None
    names = [r["strategy"] for r in rounds[0][1]["results"]]
    rows = []
    for name in names:
        ratios, rm, tm = [], [], []
        for o, t in rounds:
            a, b = by_name(o).get(name), by_name(t).get(name)
            if a and b:
                rm.append(a["median_ms"])
                tm.append(b["median_ms"])
                ratios.append(a["median_ms"] / b["median_ms"])
        if not ratios:
            continue
        a, b = by_name(rounds[0][0])[name], by_name(rounds[0][1])[name]
        rows.append([f"`{name}`", spread(rm), spread(tm), spread(ratios, "{:.2f}"),
                     f"{mib(a['activation_bytes'])} / {spread([by_name(t)[name]['activation_bytes'] / MIB for _, t in rounds])}"])
    header = ["strategy", "remat ms", f"{label} ms", "ratio remat / PyTorch", "activations MiB remat / PyTorch"]
    return table(header, rows), len(rounds)


def sweep_tables(run):
    """The planner's sweep (same budgets every round) and the paired comparison at each strategy's peak."""
    sweeps = [d.get("sweep", []) for d in run.remat]
    if not sweeps[0]:
        return None, None
    rows = []
    for i, p in enumerate(sweeps[0]):
        same = [s[i] for s in sweeps if len(s) > i and s[i]["budget_bytes"] == p["budget_bytes"]]
        exact = all(q["peak_bytes"] == q["plan_predicted_peak_bytes"] for q in same)
        fits = all(q["fits"] for q in same)
        rows.append([f"{p['budget_bytes'] / MIB:.2f}",
                     spread([q["plan_predicted_peak_bytes"] / MIB for q in same], "{:.2f}"),
                     "yes" if exact else "**no**", "yes" if fits else "**no**",
                     spread([q["plan_recompute_flops"] / 1e9 for q in same], "{:.3f}"),
                     spread([q["median_ms"] for q in same]),
                     spread([q["planning_seconds"] for q in same], "{:.2f}"),
                     p.get("at_strategy", "").replace(",", ", ") or "–"])
    sweep = table(["budget MiB", "plan's peak MiB (predicted)", "measured = predicted", "within budget",
                   "recomputed GFLOP", "step ms", "planning s", "at the peak of"], rows)
    paired = {}
    for s in sweeps:
        for p in s:
            for pt in p.get("paired", []):
                paired.setdefault(pt["strategy"], []).append((pt, p))
    rows = []
    first = by_name(run.remat[0])
    for name in first:
        if name not in paired:
            continue
        pts = paired[name]
        rows.append([f"`{name}`", mib(first[name]["peak_bytes"]),
                     spread([pt["strategy_ms"] for pt, _ in pts]), spread([pt["planned_ms"] for pt, _ in pts]),
                     spread([pt["planned_ms"] / pt["strategy_ms"] for pt, _ in pts], "{:.3f}"),
                     f"{first[name]['recomputed_flops_per_step'] / 1e9:.3f}",
                     spread([p["recomputed_flops_per_step"] / 1e9 for _, p in pts], "{:.3f}")])
    pairs = table(["strategy", "its peak MiB", "strategy ms", "plan ms", "ratio plan / strategy",
                   "strategy's recomputed GFLOP", "plan's recomputed GFLOP"], rows)
    return sweep, pairs


def gpt2xl_table(doc):
    rows = []
    cats = ["parameter", "optimizer_state", "gradient", "activation", "temporary"]
    for r in doc["results"]:
        at = r.get("predicted_at_peak", {})
        rows.append([f"`{r['strategy']}`", f"{r['predicted_peak_bytes'] / GIB:.2f}",
                     f"{r['predicted_activation_bytes'] / GIB:.2f}"] +
                    [f"{at.get(c, 0) / GIB:.2f}" for c in cats] + [f"{r['recomputed_flops_per_step'] / 1e9:.0f}"])
    return table(["strategy", "peak GiB", "activations after forward", "at the peak: parameters", "optimizer state",
                  "gradients", "activations", "temporaries", "recomputed GFLOP"], rows)


def gpu_dry_run_block(work):
    """GPT-2 XL at batch 8 on a GPU, from the dry runs that count like CUDA: a sentence and a table."""
    machine = read_kv(os.path.join(work, "machine.txt"))
    fixed = load(os.path.join(work, "gpt2xl-cuda", "results.json"))
    if fixed is None:
        sys.exit(f"benchmark_report.py: {work} has no gpt2xl-cuda/results.json")
    c = fixed["config"]
    rows = [(r, "") for r in fixed["results"]]
    for budget in GPU_BUDGETS:
        doc = load(os.path.join(work, f"gpt2xl-cuda-{budget}", "results.json"))
        if doc is None:
            sys.exit(f"benchmark_report.py: {work} has no gpt2xl-cuda-{budget}/results.json")
        p = next(r for r in doc["results"] if r["strategy"] == "planned")
        rows.append((p, f"   --budget {budget}: {p['planning_dry_runs']} dry runs, {p['planning_seconds']:.1f} s"))
    seconds = sum(r["dry_run_seconds"] for r in fixed["results"])
    flags = (f"--dry-run --device cuda --layers {c['layers']} --embd {c['embd']} --heads {c['heads']} "
             f"--seq {c['seq']} --vocab {c['vocab']} --batch {c['batch']}")
    intro = (f"GPT-2 XL at batch {c['batch']} on a GPU, predicted in a build without CUDA "
             f"({machine.get('model', '?')}, {machine.get('cores', '?')} cores, {seconds:.1f} s for all strategies; "
             f"`{flags}`):")
    lines = textwrap.wrap(intro, width=100, break_on_hyphens=False, break_long_words=False) + ["", "```",
             f"{'strategy':<14}  {'peak GiB':>8}  {'reserved GiB':>12}  {'segments':>8}  {'recomp GF':>10}"]
    for r, note in rows:
        lines.append(f"{r['strategy']:<14}  {r['predicted_peak_bytes'] / GIB:>8.2f}  "
                     f"{r['predicted_peak_reserved_bytes'] / GIB:>12.2f}  {r['predicted_segments']:>8}  "
                     f"{r['recomputed_flops_per_step'] / 1e9:>10.3f}{note}")
    lines.append("```")
    return "\n".join(lines)


def llama_block(work):
    """Llama 3 8B on one H200, from the dry runs that count like CUDA: every strategy, then the plans."""
    machine = read_kv(os.path.join(work, "machine.txt"))
    fixed = load(os.path.join(work, "llama3-8b-cuda", "results.json"))
    if fixed is None:
        sys.exit(f"benchmark_report.py: {work} has no llama3-8b-cuda/results.json")
    c = fixed["config"]
    cats = ["parameter", "optimizer_state", "gradient", "activation", "temporary"]

    def row(r, name):
        at = r.get("predicted_at_peak", {})
        return ([f"`{name}`", f"{r['predicted_peak_bytes'] / GIB:.2f}", f"{r['predicted_peak_reserved_bytes'] / GIB:.2f}",
                 str(r["predicted_segments"])] + [f"{at.get(k, 0) / GIB:.2f}" for k in cats] +
                [f"{r['recomputed_flops_per_step'] / 1e9:.0f}"])

    rows = [row(r, r["strategy"]) for r in fixed["results"]]
    plans = []
    for budget in LLAMA_BUDGETS:
        doc = load(os.path.join(work, f"llama3-8b-cuda-{budget}", "results.json"))
        if doc is not None:
            p = next(r for r in doc["results"] if r["strategy"] == "planned")
            rows.append(row(p, f"planned {budget}"))
            plans.append(f"- **{budget}**: planned in {p['planning_seconds']:.1f} s ({p['planning_dry_runs']} dry runs); "
                         f"predicted reserved peak {p['predicted_peak_reserved_bytes'] / GIB:.2f} GiB, "
                         f"{p['recomputed_flops_per_step'] / 1e12:.1f} TFLOP recomputed per step.")
            continue
        log = os.path.join(work, f"llama3-8b-cuda-{budget}.txt")
        text = open(log).read() if os.path.exists(log) else ""
        m = re.search(r"the minimum feasible peak is (\d+) bytes", text)
        if m is None:
            sys.exit(f"benchmark_report.py: {work} has no plan and no reason for the {budget} budget")
        plans.append(f"- **{budget}**: no plan fits. The lowest feasible reserved peak, everything recomputable "
                     f"recomputed, is {int(m.group(1)) / GIB:.2f} GiB ({int(m.group(1)) / 1e9:.1f} GB): the parameters, "
                     f"their gradients and AdamW's two moments alone take four times the bf16 weights.")
    seconds = sum(r["dry_run_seconds"] for r in fixed["results"])
    L = ["## Llama 3 8B on one H200, predicted", "",
         f"torchtitan's `llama3_8b` ({c['layers']} layers, dim {c['embd']}, {c['heads']} heads, {c['kv_heads']} kv heads, "
         f"ffn {c['ffn_hidden']}, vocabulary {c['vocab']}), {c['dtype']}, sequence {c['seq']}, batch {c['batch']}, AdamW, "
         f"as dry runs that count like CUDA's caching allocator, in a build without CUDA "
         f"({machine.get('model', '?')}, {machine.get('cores', '?')} cores; {seconds:.1f} s for all strategies). "
         "Sizes in GiB; the bytes at the peak by category are those of the allocated peak. The attention is the math "
         "composite (remat's fused CUDA attention takes f32 only), so the strategies that keep matmul outputs keep "
         "the [32, 8192, 8192] scores of every layer. `sac-titan` is torchtitan's per-op policy for this model.", "",
         table(["strategy", "allocated peak", "reserved peak", "segments", "at the peak: parameters",
                "optimizer state", "gradients", "activations", "temporaries", "recomputed GFLOP"], rows), "",
         "Plans (`--budget`, bytes of reserved memory; 141 GB is the H200's):", ""] + plans + ["",
         "```sh", f"REMAT_BENCH_ONLY=llama3-8b tools/benchmark_report.sh   # this section alone", "```"]
    return "\n".join(L)


def replace_between(path, begin, end, body):
    text = open(path).read()
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        sys.exit(f"benchmark_report.py: {path} has no '{begin}' ... '{end}' markers")
    with open(path, "w") as f:
        f.write(text[:start] + begin + "\n" + body + "\n" + text[stop:])


def commands_text(run):
    home = os.path.expanduser("~")
    out = [f"export OMP_NUM_THREADS={run.machine.get('threads', '1')}"]
    for c in run.commands:
        c = c.replace(run.work, "$WORK").replace(home, "~")
        out.append(c)
    return "\n".join(out)


def write_docs(run, docs):
    m = run.machine
    cfg = run.remat[0]["config"]
    torch_version = run.torch_field(r"^version=(.*)$")
    mkl = run.torch_field(r"Math Kernel Library Version (\S+)")
    onednn = run.torch_field(r"MKL-DNN (v[\d.]+)")
    capability = run.torch_field(r"^capability=(.*)$")
    blas = run.torch_field(r"BLAS_INFO=([^,]+)")
    flags = m.get("flags", "").split()
    notable = [f for f in flags if f.startswith(("avx", "fma", "amx"))]
    L = []
    L.append("# Benchmarks")
    L.append("")
    L.append("<!-- Written by tools/benchmark_report.sh (tools/benchmark_report.py); do not edit by hand: rerun it. -->")
    L.append("")
    L.append(f"**{m.get('model', '?')}**, {m.get('cores', '?')} cores ({m.get('threads_per_core', '?')} thread per "
             f"core), {m.get('kernel', '')}; measured {m.get('date', '?')}. Vector flags: "
             f"`{' '.join(notable)}` (all of them at the end of this page).")
    L.append("")
    L.append(f"- remat: commit {m.get('commit', '?')}, {m.get('compiler', '?')}, `-O2 -march=native`; OpenBLAS "
             f"{m.get('openblas', '?')} (Debian, OpenMP build), oneDNN {m.get('onednn', '?')} (Debian).")
    if torch_version:
        L.append(f"- PyTorch {torch_version.split('+')[0]} (PyPI's wheel {torch_version}, on the CPU): BLAS {blas} (oneMKL {mkl}), oneDNN {onednn}, CPU capability "
                 f"{capability}.")
    L.append(f"- {config_line(cfg)}.")
    L.append(f"- Every time is {threads_text(run)} per training step (`OMP_NUM_THREADS={m.get('threads')}`, "
             f"`--clock {m.get('clock')}`); each strategy's figure is the median of its steps, and each figure "
             f"below is the median over **{run.rounds} rounds** with the spread (min–max) after it; one number "
             f"alone: every round gave the same. The machine was shared: load average "
             f"{m.get('load_start', '?')} at the start, {m.get('load_end', '?')} at the end (1, 5 and 15 minutes).")
    L.append(f"- The whole run took {max(1, round(int(m.get('seconds', 0)) / 60))} min; its commands are at the end.")
    L.append("")

    L.append("## Memory: predicted beside measured")
    L.append("")
    L.append("A dry run of the same steps on the Meta device (no kernels, no memory touched) predicts each "
             "strategy's peak and activation memory; then the steps run on the CPU. Memory and FLOPs do not "
             "move from round to round.")
    L.append("")
    rows, all_same, all_exact = [], True, True
    for name, r, same, exact in memory_rows(run):
        all_same &= same
        all_exact &= exact
        rows.append([f"`{name}`", mib(r["predicted_peak_bytes"]), mib(r["peak_bytes"]), mib(r["predicted_activation_bytes"]),
                     mib(r["activation_bytes"]), f"{r['recomputed_flops_per_step'] / 1e9:.3f}",
                     f"{r['replayed_per_step']:.0f}", f"{r['final_loss']:.6f}"])
    L.append(table(["strategy", "peak MiB predicted", "measured", "activations MiB predicted", "measured",
                    "recomputed GFLOP", "replayed calls", "final loss"], rows))
    L.append("")
    L.append(f"Measured equals predicted to the byte for every strategy: **{'yes' if all_exact else 'no'}**; the same "
             f"in all {run.rounds} rounds: **{'yes' if all_same else 'no'}**. Recomputed GFLOP: per step "
             f"(matmuls 2mnk, other ops one per element); replayed: op calls answered from the selective-checkpoint "
             f"cache instead of recomputed.")
    L.append("")

    L.append("## Step time: every strategy one step in turn")
    L.append("")
    L.append("Within one process every strategy takes one training step in turn (each round of steps in the "
             "opposite order to the last), so a slow spell of the machine hits all of them alike.")
    L.append("")
    rows = []
    for name in by_name(run.remat[0]):
        ms = [by_name(d)[name].get("interleaved_ms") for d in run.remat]
        rows.append([f"`{name}`", spread(ms), pct(overheads(run, name)),
                     f"{by_name(run.remat[0])[name]['recomputed_flops_per_step'] / 1e9:.3f}"])
    L.append(table(["strategy", "step ms", "against `none`", "recomputed GFLOP"], rows))
    L.append("")

    sweep, pairs = sweep_tables(run)
    if sweep:
        L.append("## The planner: a budget in, a plan out")
        L.append("")
        L.append("`--sweep` plans budgets evenly spaced between the lowest peak any plan reaches (everything "
                 "recomputed) and the highest (everything backward needs kept), and `--sweep-at-strategies` one at "
                 "each fixed strategy's measured peak; each plan then runs like the strategies. The planner prices "
                 "recomputation by timing each distinct op call once on this machine (`--estimate benchmark`), so a "
                 "plan can differ from round to round: its recomputed GFLOP then show a spread.")
        L.append("")
        L.append(sweep)
        L.append("")
        L.append("Peak memory against recomputed FLOPs (round 1): the fixed strategies, their Pareto front (red) and "
                 "the plans (green).")
        L.append("")
        L.append("![peak memory against recomputed FLOPs, with the planned frontier](memory_vs_flops.svg)")
        L.append("")
        L.append("### Each plan beside the strategy whose peak it was given")
        L.append("")
        L.append("The strategy and its plan one step each in turn in one process (paired).")
        L.append("")
        L.append(pairs)
        L.append("")
        L.append("At `none`'s peak the plan keeps everything and recomputes nothing, but its regions still run "
                 "under SAC's dispatch mode and saved-tensor hooks, which `none` does without.")
        L.append("")

    for ours, theirs, title in ((run.remat, run.torch, "f32"), (run.remat_bf16, run.torch_bf16, "bf16")):
        if not any(theirs):
            continue
        label = "PyTorch " + (torch_version or "?").split("+")[0]
        got = comparison(run, ours, theirs, label)
        if not got:
            continue
        text, n = got
        L.append(f"## remat beside {label}, {title}")
        L.append("")
        if title == "bf16":
            L.append(f"The same in bf16 (parameters, activations and gradients), `{BF16_STRATEGIES}`, "
                     f"{n} rounds as above.")
            L.append("")
            L.append(text)
            L.append("")
            continue
        L.append(f"`bench/torch_reference.py` runs the same model, strategies and measurements in PyTorch (SAC through "
                 f"`create_selective_checkpoint_contexts` with the same policies). Each of the {n} rounds ran both, "
                 f"PyTorch first in odd rounds and remat first in even ones; the ratio is taken within each round. "
                 f"PyTorch initialises the model its own way, so its losses differ; its activation memory is what its "
                 f"profiler counts during forward.")
        L.append("")
        L.append(text)
        L.append("")

    if run.gpt2xl:
        c = run.gpt2xl["config"]
        L.append("## A model too large to run here, predicted")
        L.append("")
        L.append(f"GPT-2 XL ({c['layers']} layers, d_model {c['embd']}, {c['heads']} heads, sequence {c['seq']}, "
                 f"batch {c['batch']}, vocabulary {c['vocab']}, f32, AdamW) as dry runs on the Meta device "
                 f"(`--dry-run`): nothing is computed and no memory is touched. Sizes in GiB; the bytes at the peak by "
                 f"category sum to the peak.")
        L.append("")
        L.append(gpt2xl_table(run.gpt2xl))
        L.append("")

    if os.path.exists(os.path.join(run.work, "llama3-8b-cuda", "results.json")):
        L += [LLAMA_BEGIN, llama_block(run.work), LLAMA_END, ""]

    L.append("## Memory over one step")
    L.append("")
    L.append("By category (parameters, optimizer state, gradients, activations, temporaries), the phases shaded "
             "behind, and the dry run's prediction dashed over the measured total (round 1).")
    L.append("")
    for name, what in (("none", "no checkpointing"), ("full", "full checkpointing"),
                       ("sac-mm", "SAC saving every matmul")):
        L.append(f"![memory by category over one training step, {what}](timeline_{name}.svg)")
    L.append("")

    L.append("## How this was run")
    L.append("")
    L.append("```sh")
    L.append("tools/benchmark_report.sh   # all of the below, then this page")
    L.append(commands_text(run))
    L.append("```")
    L.append("")
    L.append("All CPU flags:")
    L.append("")
    L.append("```")
    L.append(m.get("flags", "?"))
    L.append("```")
    text = "\n".join(L) + "\n"
    with open(os.path.join(docs, "benchmarks.md"), "w") as f:
        f.write(text)
    for chart in CHARTS:
        src = os.path.join(run.work, "r1", "remat-f32", chart)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(docs, chart))


def write_readme(run, path):
    replace_between(path, BEGIN, END, readme_table(run))
    replace_between(path, GPU_BEGIN, GPU_END, gpu_dry_run_block(run.work))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("work")
    p.add_argument("--docs", default="docs")
    p.add_argument("--readme", default="README.md")
    p.add_argument("--only", choices=["gpu-dry-run", "llama3-8b"],
                   help="write only the README's GPU prediction, or only docs/benchmarks.md's Llama 3 8B section")
    a = p.parse_args()
    if a.only == "gpu-dry-run":
        replace_between(a.readme, GPU_BEGIN, GPU_END, gpu_dry_run_block(a.work))
        return
    if a.only == "llama3-8b":
        replace_between(os.path.join(a.docs, "benchmarks.md"), LLAMA_BEGIN, LLAMA_END, llama_block(a.work))
        return
    run = Run(a.work)
    os.makedirs(a.docs, exist_ok=True)
    write_docs(run, a.docs)
    write_readme(run, a.readme)


if __name__ == "__main__":
    main()
