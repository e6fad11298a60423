# no PyTorch counterpart: remat's Llama and its PyTorch twin (bench/torch_llama.py) keep the same
# activation bytes under every fixed strategy, up to the differences docs/pytorch.md ("The Llama")
# explains op by op. Runs remat's dry run (its predicted bytes equal the CPU's to the byte) and the
# twin on the CPU at a tiny size, in f32 and bf16. Needs bazel-bin/bench/memory_vs_recompute
# (`./bazelw build //bench:memory_vs_recompute`; .ci/run builds it before this) or REMAT_BENCH.
import json
import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
SCRIPT = os.path.join(ROOT, "bench", "torch_reference.py")
BENCH = os.environ.get("REMAT_BENCH", os.path.join(ROOT, "bazel-bin", "bench", "memory_vs_recompute"))
# grouped-query attention (4 heads over 2 kv heads), an odd layer count (every2 leaves a block unchecked)
TINY = dict(layers=3, embd=32, heads=4, seq=8, batch=2, vocab=64)
LLAMA = ["--model", "llama", "--config", "debugmodel", "--kv-heads", "2", "--ffn", "48", "--steps", "1",
         "--warmup", "0"]
STRATEGIES = ["none", "full", "full-reentrant", "every2", "sac-mm", "sac-titan", "sac-no-w2"]


def sizes():
    return [a for k, v in TINY.items() for a in (f"--{k}", str(v))]


def remat_bytes(dtype, tmp_path):
    out = tmp_path / f"remat_{dtype}"
    r = subprocess.run([BENCH, *LLAMA, *sizes(), "--attention", "sdpa", "--dtype", dtype, "--dry-run",
                        "--no-interleave", "--no-timeline", "--strategies", ",".join(STRATEGIES), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads((out / "results.json").read_text())["results"]
    return {row["strategy"]: row["predicted_activation_bytes"] for row in rows}


def torch_bytes(dtype, tmp_path):
    out = tmp_path / f"torch_{dtype}.json"
    r = subprocess.run([sys.executable, SCRIPT, *LLAMA, *sizes(), "--dtype", dtype, "--strategies",
                        ",".join(STRATEGIES), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return {row["strategy"]: row["activation_bytes"] for row in json.loads(out.read_text())["results"]}


def documented_difference(strategy, e):
    """PyTorch's bytes less remat's (docs/pytorch.md, "The Llama"), e bytes per element."""
    L, N = TINY["layers"], TINY["batch"] * TINY["seq"] * TINY["embd"]
    checkpointed = {"none": 0, "every2": (L + 1) // 2}.get(strategy, L)  # every2: blocks 0, 2, ...
    # (RMSNorm is PyTorch 2.15's CPU composite on both sides: pow, mean, add_, rsqrt, mul, mul)
    rng_state = torch.get_rng_state().numel()  # preserve_rng_state's CPU generator state per checkpoint
    w2_kept = L if strategy in ("sac-mm", "sac-titan") else 0  # SAC storage keeps w2's output; remat releases it
    total_weight = e  # NllLossBackward0's 0-dim total_weight
    return checkpointed * rng_state + w2_kept * N * e + total_weight


@pytest.mark.parametrize("dtype,e", [("f32", 4), ("bf16", 2)])
def test_llama_activation_bytes_differ_only_as_documented(dtype, e, tmp_path):
    if not os.path.exists(BENCH):
        pytest.skip(f"{BENCH} is not built (./bazelw build //bench:memory_vs_recompute)")
    remat, twin = remat_bytes(dtype, tmp_path), torch_bytes(dtype, tmp_path)
    assert sorted(remat) == sorted(twin) == sorted(STRATEGIES)
    diffs = {s: twin[s] - remat[s] for s in STRATEGIES}
    assert diffs == {s: documented_difference(s, e) for s in STRATEGIES}, (remat, twin)


@pytest.mark.parametrize("dtype,e", [("f32", 4), ("bf16", 2)])
def test_llama_plans_exported_by_remat_run_in_the_twin_at_the_predicted_bytes(dtype, e, tmp_path):
    # Issue 42: a sweep's plans, exported by remat, applied to the twin by python/remat_plan (no
    # PlanMismatchError: the same op calls, the rotary embeddings' complex64 ones included), measure
    # remat's predicted activation bytes plus only the checkpoints' RNG states and total_weight.
    if not os.path.exists(BENCH):
        pytest.skip(f"{BENCH} is not built (./bazelw build //bench:memory_vs_recompute)")
    plans = tmp_path / "plans"
    r = subprocess.run([BENCH, *LLAMA, *sizes(), "--attention", "sdpa", "--dtype", dtype, "--sweep", "3",
                        "--export-plan", str(plans), "--strategies", "none", "--no-interleave", "--no-timeline",
                        "--out", str(tmp_path / "remat")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "torch.json"
    r = subprocess.run([sys.executable, SCRIPT, *LLAMA, *sizes(), "--dtype", dtype, "--plan", str(plans), "--out",
                        str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["results"]
    assert len(rows) == 3
    for row in rows:
        # every block is a checkpointed region: one RNG state each, and NllLossBackward0's total_weight
        assert row["activation_bytes"] - row["predicted_activation_bytes"] == \
            TINY["layers"] * torch.get_rng_state().numel() + e, row
