# no PyTorch counterpart: bench/torch_reference.py --plan, the twin GPT trained under a plan, at a tiny size.
import json
import os
import subprocess
import sys
import types

import torch

from conftest import plan_doc, record_calls, region_doc

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
SCRIPT = os.path.join(ROOT, "bench", "torch_reference.py")
TINY = dict(layers=2, embd=16, heads=2, seq=8, batch=2, vocab=11)


def twin_plan_doc(decide):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import torch_reference
    finally:
        sys.path.pop(0)
    model = torch_reference.GPT(types.SimpleNamespace(sdpa=False, **TINY))
    x = torch.randn(TINY["batch"], TINY["seq"], TINY["embd"])
    return plan_doc([region_doc(f"layers.{i}", record_calls(block, x), decide) for i, block in enumerate(model.layers)])


def run(plan_path, *extra):
    args = [sys.executable, SCRIPT, "--steps", "1", "--warmup", "0", "--plan", plan_path]
    for k, v in TINY.items():
        args += [f"--{k}", str(v)]
    args += list(extra)  # later flags win
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def test_plan_trains_the_twin_and_reports_the_prediction(write_plan, tmp_path):
    doc = twin_plan_doc(lambda op, n: "save" if op in ("aten::addmm", "aten::bmm") else "recompute")
    doc["predicted"]["activation_bytes"] = 12345
    out = tmp_path / "torch.json"
    r = run(write_plan(doc), "--out", str(out))
    assert r.returncode == 0, r.stderr
    [row] = json.loads(out.read_text())["results"]
    assert row["strategy"] == "plan" and row["predicted_activation_bytes"] == 12345
    assert row["activation_bytes"] > 0 and row["final_loss"] == row["final_loss"]


def test_plan_for_other_shapes_stops_at_the_first_call(write_plan):
    r = run(write_plan(twin_plan_doc(lambda op, n: "recompute")), "--batch", "3")
    assert r.returncode != 0
    assert "--plan: remat_plan: region 'layers.0', call 0: other output shapes or dtypes" in r.stderr
    assert "seen aten::native_layer_norm -> (f32[3x8x16]" in r.stderr


def test_plan_for_another_dtype_is_refused(write_plan):
    doc = twin_plan_doc(lambda op, n: "recompute")
    doc["dtype"] = "bf16"
    r = run(write_plan(doc))
    assert r.returncode != 0 and "the plan is for dtype bf16; run with --dtype bf16 (got f32)" in r.stderr
