# no PyTorch counterpart: bench/torch_reference.py --plan, the twin GPT trained under a plan, at a tiny size.
import json
import os
import subprocess
import sys
import types

import torch

import remat_plan

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
    assert row["budget_bytes"] == doc["budget_bytes"]
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


def renumber(region):
    """Each call's index among its op's calls, and the fingerprint, after the calls were edited."""
    counts = {}
    for c in region["calls"]:
        c["index"] = counts.get(c["op"], 0)
        counts[c["op"]] = c["index"] + 1
    region["fingerprint"] = remat_plan.fingerprint(
        [(c["op"], [(o["dtype"], o["shape"]) for o in c["outputs"]]) for c in region["calls"]])


def test_plan_to_twin_carries_kept_calls_onto_the_twins_calls(write_plan, tmp_path):
    source = twin_plan_doc(lambda op, n: "save" if op in ("aten::addmm", "aten::_softmax") else "recompute")
    for region in source["regions"]:  # as remat names them, and with its own view calls
        region["calls"] = [dict(c, op="aten::_masked_softmax") if c["op"] == "aten::_softmax" else c
                           for c in region["calls"] if c["op"] != "aten::_unsafe_view"]
        renumber(region)
    out = tmp_path / "twin.json"
    args = [sys.executable, os.path.join(ROOT, "bench", "plan_to_twin.py"), write_plan(source), str(out)]
    for k, v in TINY.items():
        args += [f"--{k}", str(v)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    twin = remat_plan.load(str(out))
    expected = twin_plan_doc(lambda op, n: "save" if op in ("aten::addmm", "aten::_softmax") else "recompute")
    assert [[c.decision for c in r.calls] for r in twin.regions.values()] == \
        [[c["decision"] for c in r["calls"]] for r in expected["regions"]]

    source["regions"][1]["calls"][0]["decision"] = "save"
    source["regions"][1]["calls"][0]["op"] = "aten::unknown_norm"
    renumber(source["regions"][1])
    args[2] = write_plan(source, "bad.json")
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "kept calls with no twin counterpart: layers.1: aten::unknown_norm #0" in r.stderr


def test_plan_to_twin_recomputes_what_remat_releases(write_plan, tmp_path):
    # everything kept: no rerun is needed, so remat releases every kept output backward never reads, as fc2's
    # aten::addmm (#3: the residual add after it saves nothing), and keeps fc1's (#2: gelu's backward reads it)
    out = tmp_path / "twin.json"
    args = [sys.executable, os.path.join(ROOT, "bench", "plan_to_twin.py"), "--recompute-released",
            write_plan(twin_plan_doc(lambda op, n: "save")), str(out)]
    for k, v in TINY.items():
        args += [f"--{k}", str(v)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for region in remat_plan.load(str(out)).regions.values():
        decision = {(c.op, c.index): c.decision for c in region.calls}
        assert decision[("aten::addmm", 3)] == "recompute" and decision[("aten::addmm", 2)] == "save"
        assert decision[("aten::add", 1)] == "save"  # the region's output: alive anyway
    assert "aten::addmm at call" in r.stderr and "recomputed (remat releases it)" in r.stderr


def write_budget_plans(write_plan, budgets, predicted):
    """Plan files for the twin, one per budget, its predicted activation bytes predicted(budget)."""
    paths = []
    for budget in budgets:
        doc = twin_plan_doc(lambda op, n: "save" if op == "aten::addmm" else "recompute")
        doc["budget_bytes"] = budget
        doc["predicted"]["activation_bytes"] = predicted(budget)
        paths.append(write_plan(doc, f"plans/plan_{budget}.json"))
    return paths


def test_several_plans_a_row_each_by_budget_from_a_folder_or_a_list(write_plan, tmp_path):
    (tmp_path / "plans").mkdir()
    paths = write_budget_plans(write_plan, [300000, 200000], lambda b: b // 10)
    (tmp_path / "plans" / "notes.txt").write_text("not a plan")  # only *.json is read
    for given in (str(tmp_path / "plans"), ",".join(paths)):
        out = tmp_path / "torch.json"
        r = run(given, "--out", str(out))
        assert r.returncode == 0, r.stderr
        rows = json.loads(out.read_text())["results"]
        assert [row["strategy"] for row in rows] == ["plan@200000", "plan@300000"]
        for row, budget in zip(rows, (200000, 300000)):
            assert row["budget_bytes"] == budget and row["predicted_activation_bytes"] == budget // 10
            assert row["plan"].endswith(f"plan_{budget}.json")
            assert row["activation_bytes"] > 0 and row["median_ms"] > 0
        # the same plan's decisions, so the same bytes under each
        assert rows[0]["activation_bytes"] == rows[1]["activation_bytes"]


def test_several_plans_for_one_budget_or_an_empty_folder_are_refused(write_plan, tmp_path):
    (tmp_path / "plans").mkdir()
    first, second = write_budget_plans(write_plan, [5000, 7000], lambda b: 1)
    doc = json.loads(open(second).read())
    doc["budget_bytes"] = 5000
    second = write_plan(doc, "plans/plan_7000.json")
    r = run(f"{first},{second}")
    assert r.returncode != 0
    assert f"--plan: {first} and {second} are both plans for 5000 bytes; one row per budget" in r.stderr
    (tmp_path / "empty").mkdir()
    r = run(str(tmp_path / "empty"))
    assert r.returncode != 0 and f"--plan {tmp_path / 'empty'}: the folder holds no *.json plan file" in r.stderr
    r = run(",")
    assert r.returncode != 0 and "--plan ',': no plan file named" in r.stderr


def test_several_plans_for_other_shapes_stop_naming_the_file(write_plan, tmp_path):
    (tmp_path / "plans").mkdir()
    low, _ = write_budget_plans(write_plan, [100, 200], lambda b: 1)
    r = run(str(tmp_path / "plans"), "--batch", "3")
    assert r.returncode != 0
    assert "--plan: remat_plan: region 'layers.0', call 0: other output shapes or dtypes" in r.stderr
    assert r.stderr.strip().endswith(f"(the plan {low})")  # the lowest budget's, run first
