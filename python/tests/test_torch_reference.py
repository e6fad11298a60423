# no PyTorch counterpart: bench/torch_reference.py --plan, the twin GPT trained under a plan, at a tiny size.
import importlib
import json
import os
import subprocess
import sys
import types

import pytest
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


@pytest.mark.parametrize("tool", ["gpt_block_calls", "llama_block_calls"])
def test_the_twins_block_runs_the_calls_remat_runs(tool):
    # tests/nn/data/<tool>.json pins a twin's block calls (tools/<tool>.py wrote it): the GPT's
    # (tests/nn/transformer_test.cpp checks remat's nn::Block against it) and the Llama's (PyTorch 2.15's
    # CPU RMSNorm composite, the rotary embeddings through complex64, the fused attention;
    # tests/nn/llama_test.cpp checks remat's nn::TransformerBlock). Both pass: a plan made by remat applies
    # to the twin call by call.
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        module = importlib.import_module(tool)
    finally:
        sys.path.pop(0)
    with open(os.path.join(ROOT, "tests", "nn", "data", tool + ".json")) as f:
        pinned = json.load(f)
    assert pinned["sizes"] == module.SIZES
    for name, dtype in module.DTYPES.items():
        assert module.as_json(module.block_calls(dtype)) == pinned[name], name


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


def test_profile_ops_lists_the_steps_aten_ops_per_timed_step():
    args = [sys.executable, SCRIPT, "--steps", "2", "--warmup", "1", "--strategies", "none,full", "--profile-ops"]
    for k, v in TINY.items():
        args += [f"--{k}", str(v)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "none: its ops per timed step (2 steps; self CPU time, torch.profiler)" in r.stdout
    assert "full: its ops per timed step" in r.stdout
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if line.startswith("aten::addmm ")}
    assert float(rows["aten::addmm"][1]) > 0  # calls per step


def serve(lines, *flags):
    """Runs `torch_reference.py --serve` on these request lines; (exit status, answers, stderr)."""
    r = subprocess.run([sys.executable, SCRIPT, "--serve", *flags], input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=300)
    return r.returncode, [json.loads(line) for line in r.stdout.splitlines()], r.stderr


def tiny_args(*extra):
    args = []
    for k, v in TINY.items():
        args += [f"--{k}", str(v)]
    return args + list(extra)


def test_serve_builds_each_strategy_then_answers_a_step_a_line():
    # memory_vs_recompute --beside's peer: the session, then one training step per request
    session = {"args": tiny_args("--strategies", "none,full,sac-mm", "--clock", "cpu")}
    code, answers, err = serve([session, {"strategy": "none"}, {"strategy": "full"}, {"strategy": "sac-mm"},
                                {"strategy": "none"}])
    assert code == 0, err
    first, steps = answers[0], answers[1:]
    assert first["framework"] == f"pytorch {torch.__version__}"
    assert first["strategies"] == ["none", "full", "sac-mm"] and first["threads"] == 1 and first["clock"] == "cpu"
    assert len(steps) == 4 and all(s["ms"] > 0 for s in steps)
    # every strategy's model starts from the same weights and batch: the first steps' losses agree
    assert steps[0]["loss"] == steps[1]["loss"] == steps[2]["loss"]
    assert steps[3]["loss"] != steps[0]["loss"]  # none's second step, after AdamW's first update


def test_serve_answers_a_request_it_cannot_take_with_an_error_and_ends():
    cases = [
        ({"args": ["--layers", "x"]}, "the session's args: argument --layers: invalid int value: 'x'"),
        ({"args": tiny_args("--profile-ops")},
         "the session's args: --profile-ops is not for --serve (it answers steps)"),
        ({"args": tiny_args("--strategies", "bogus")}, "strategy 'bogus': no such strategy here"),
        ({"args": tiny_args("--kv-heads", "2")},
         "the session's args: --kv-heads and --ffn are the Llama's (--model llama)"),
        ({"rows": []}, 'the first request must be a JSON object {"args": [flags as strings]}: {"rows": []}'),
    ]
    for session, error in cases:
        code, answers, _ = serve([session, {"strategy": "none"}])
        assert code == 1 and answers == [{"error": error}], session
    code, answers, _ = serve([{"args": tiny_args("--strategies", "none")}, {"strategy": "full"}, {"strategy": "none"}])
    assert code == 1 and len(answers) == 2
    assert answers[1] == {"error": 'a step request must be {"strategy": one of [\'none\']}: {"strategy": "full"}'}


def test_serve_takes_its_flags_on_stdin_only():
    r = subprocess.run([sys.executable, SCRIPT, "--serve", "--layers", "2"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1
    assert "--serve takes its session's flags on stdin (the first JSON line): give no other flag" in r.stderr


def test_serve_runs_a_plan_file_as_its_strategy_plan(write_plan):
    # memory_vs_recompute --beside --budget B: the plan it made, saved for the peer, stepped as 'plan'
    doc = twin_plan_doc(lambda op, n: "save" if op in ("aten::addmm", "aten::bmm") else "recompute")
    path = write_plan(doc)
    code, answers, err = serve([{"args": tiny_args("--strategies", "none,plan", "--plan", path)},
                                {"strategy": "plan"}, {"strategy": "none"}])
    assert code == 0, err
    assert answers[0]["strategies"] == ["none", "plan"]
    assert answers[1]["ms"] > 0 and answers[1]["loss"] == answers[2]["loss"]  # the same weights, the same first step
    # a plan for other shapes: the step's error, named, and the end of the session
    code, answers, _ = serve([{"args": tiny_args("--strategies", "plan", "--plan", path, "--batch", "3")},
                              {"strategy": "plan"}])
    assert code == 1 and "error" in answers[1]
    assert answers[1]["error"].startswith("strategy 'plan': remat_plan: region 'layers.0', call 0: other output shapes")
