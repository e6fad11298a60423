# no PyTorch counterpart: bench/torch_ops.py, the PyTorch side of `ops --compare`, on tiny shapes.
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
SCRIPT = os.path.join(ROOT, "bench", "torch_ops.py")

# One row per op the script knows, at the shapes `ops --quick` gives each kind of row.
SHAPES = {"softmax": [16, 32], "layer_norm": [16, 32], "cross_entropy": [16, 40], "scores": [8, 4, 8, 8],
          "hidden": [8, 8, 64], "bias": [64, 64], "rotary": [8, 8, 16, 8]}


def shape_of(op):
    if op.startswith("softmax(dim=-1) f") or op.startswith("layer_norm"):
        return SHAPES["softmax"]
    if op.startswith("cross_entropy"):
        return SHAPES["cross_entropy"]
    if op in ("mul (scores * scale)", "masked_fill (causal, -inf)", "softmax(dim=-1) of masked scores",
              "_masked_softmax (causal [L, S] mask)", "_softmax_backward_data", "masked_fill (its backward, 0)",
              "_masked_softmax_backward (both above)"):
        return SHAPES["scores"]
    if op.startswith("gelu") and "tanh" in op:
        return SHAPES["hidden"]
    if op.startswith("cat"):
        return [8, 8, 96]
    if "heads out" in op:
        return SHAPES["scores"]
    if "rotary" in op:
        return SHAPES["rotary"]
    if op.startswith("bmm"):
        return [4, 8, 16, 8]
    if op.startswith("matmul"):
        return [2, 2, 8, 16, 8]
    if op.startswith("mm") or op.startswith("addmm"):
        return [16, 24, 8]
    return SHAPES["bias"]


def listing():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import torch_ops
    finally:
        sys.path.pop(0)
    rows = [{"op": op, "dtype": dt, "shape": shape_of(op), "threads": 1} for op in torch_ops.OPS for dt in ("f32", "bf16")
            if not (op == "to(bf16)" and dt == "bf16") and not (op == "to(f32)" and dt == "f32")]
    return {"threads": 1, "reps": 1, "min_sample_s": 0.0, "clock": "cpu", "rows": rows}


def test_every_row_runs_and_the_figures_have_the_shape_ops_reads(tmp_path):
    rows_path, out_path = tmp_path / "rows.json", tmp_path / "torch.json"
    doc = listing()
    rows_path.write_text(json.dumps(doc))
    subprocess.run([sys.executable, SCRIPT, "--rows", str(rows_path), "--out", str(out_path)], check=True)
    figures = json.loads(out_path.read_text())
    assert figures["threads"] == 1
    assert figures["clock"] == "cpu"
    assert isinstance(figures["torch_version"], str)
    assert [(r["op"], r["dtype"], r["shape"]) for r in figures["rows"]] == [
        (r["op"], r["dtype"], r["shape"]) for r in doc["rows"]]
    for r in figures["rows"]:
        assert r["torch_ms"] > 0
        assert r["torch_out_ms"] is None or r["torch_out_ms"] > 0


def test_an_unknown_row_is_refused_by_name(tmp_path):
    rows_path = tmp_path / "rows.json"
    rows_path.write_text(json.dumps({"threads": 1, "reps": 1, "min_sample_s": 0.0,
                                     "rows": [{"op": "frobnicate", "dtype": "f32", "shape": [2], "threads": 1}]}))
    r = subprocess.run([sys.executable, SCRIPT, "--rows", str(rows_path), "--out", str(tmp_path / "o.json")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "no PyTorch form for the row(s) ['frobnicate']" in r.stderr


def serve(lines):
    """Runs `torch_ops.py --serve` on these request lines; (exit status, answers, stderr)."""
    r = subprocess.run([sys.executable, SCRIPT, "--serve"], input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=300)
    return r.returncode, [json.loads(line) for line in r.stdout.splitlines()], r.stderr


SESSION = {"threads": 1, "reps": 1, "min_sample_s": 0.0, "clock": "cpu"}


def test_serve_answers_the_session_then_each_row_a_line_each():
    rows = [{"op": "add_ (acc += b, in place)", "dtype": "f32", "shape": [64, 64]},
            {"op": "add_ (acc += b, in place)", "dtype": "f32", "shape": [64, 64]},  # the same row again: a round
            {"op": "gelu (tanh)", "dtype": "bf16", "shape": [8, 8, 64]}]
    code, answers, _ = serve([SESSION] + rows)
    assert code == 0
    assert len(answers) == 4
    assert answers[0]["threads"] == 1 and answers[0]["clock"] == "cpu"
    assert isinstance(answers[0]["torch_version"], str)
    for a in answers[1:]:
        assert a["torch_ms"] > 0
    assert answers[1]["torch_out_ms"] is None  # in place: no out= form
    assert answers[3]["torch_out_ms"] > 0


def test_serve_answers_a_request_it_cannot_take_with_an_error_and_ends():
    bad_sessions = [
        ([1], "the first request must be a JSON object"),
        ({"threads": 0, "reps": 1, "min_sample_s": 0.0, "clock": "cpu"}, "'threads' is missing or out of range"),
        ({"threads": 1, "reps": 1, "min_sample_s": 0.0, "clock": "sundial"}, "'clock' is missing or out of range"),
        ({"threads": 1, "reps": True, "min_sample_s": 0.0, "clock": "cpu"}, "'reps' is missing or out of range"),
    ]
    for session, why in bad_sessions:
        code, answers, _ = serve([session, {"op": "gelu", "dtype": "f32", "shape": [4]}])
        assert code == 1
        assert len(answers) == 1 and why in answers[0]["error"], answers
    bad_rows = [
        ({"op": "frobnicate", "dtype": "f32", "shape": [2]},
         "no PyTorch form for the row 'frobnicate': add it to OPS in bench/torch_ops.py"),
        ({"op": "gelu", "dtype": "f16", "shape": [2]}, "row 'gelu': dtype must be one of ['bf16', 'f32'], got \"f16\""),
        ({"op": "gelu", "dtype": "f32", "shape": [0]}, "row 'gelu': shape must be a list of integers >= 1, got [0]"),
        ({"dtype": "f32"}, "a row request must be a JSON object with 'op', 'dtype' and 'shape'"),
    ]
    for row, why in bad_rows:
        code, answers, _ = serve([SESSION, row, {"op": "gelu", "dtype": "f32", "shape": [4]}])
        assert code == 1
        assert len(answers) == 2 and answers[1]["error"].startswith(why), answers


def test_serve_takes_no_rows_file():
    r = subprocess.run([sys.executable, SCRIPT, "--serve", "--rows", "x.json"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "--serve takes its rows on stdin: give neither --rows nor --out" in r.stderr


def test_serve_answers_a_line_that_is_not_json_with_an_error():
    r = subprocess.run([sys.executable, SCRIPT, "--serve"], input="hello\n", capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert json.loads(r.stdout) == {"error": "not a JSON line: hello"}
