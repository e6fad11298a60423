#!/usr/bin/env python3
"""The PyTorch side of bench/ops: every bandwidth row of `ops` timed in PyTorch, same op, shape, dtype
and thread count, timed as `ops` times it (one warm-up call, then the median of `reps` samples, each
repeating the call until it lasts `min_sample_s`, by the wall clock or, as `ops --clock cpu`, by the
process's CPU time: on a busy machine only that is steady, and only with one thread).

`ops --list-rows` writes the rows (and reps, min_sample_s, threads) as JSON; this script times each
one and writes its figures as JSON; `ops --compare FILE` prints them beside remat's:

  ./bazelw build //bench:ops
  bazel-bin/bench/ops --threads 2 --list-rows > /tmp/rows.json
  ~/.cache/remat/venv/bin/python bench/torch_ops.py --rows /tmp/rows.json --out /tmp/torch.json
  bazel-bin/bench/ops --threads 2 --compare /tmp/torch.json --json /tmp/ops.json

Per row: torch_ms is the op as a user calls it (a fresh output tensor: PyTorch's CPU allocator does
not cache, so a large output pays first-touch page faults); torch_out_ms is the same kernel writing
into an existing output (out=, or copy_ for a copy), null where the op has no such form or already
writes in place. A row this script does not know is refused by name (add it to OPS below).
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def randn(shape, dtype, seed, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=torch.float32).to(dtype)
    return t.requires_grad_() if requires_grad else t


def causal(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), 1)


# Each maker takes (shape, dtype) and returns (call, out_call or None): out_call runs the same
# kernel into a preallocated output.
def binary(fn):
    def make(shape, dt):
        a, b, c = randn(shape, dt, 3), randn(shape, dt, 4), torch.empty(shape, dtype=dt)
        return (lambda: fn(a, b)), (lambda: fn(a, b, out=c))
    return make


def unary(fn, out_fn=None):
    def make(shape, dt):
        a, c = randn(shape, dt, 3), torch.empty(shape, dtype=dt)
        return (lambda: fn(a)), (None if out_fn is None else (lambda: out_fn(a, c)))
    return make


def add_inplace(shape, dt):
    acc, b = randn(shape, dt, 3), randn(shape, dt, 4)
    return (lambda: acc.add_(b)), None


def contiguous(shape, dt):
    at = randn(shape, dt, 3).t()
    c = torch.empty(at.shape, dtype=dt)
    return (lambda: at.contiguous()), (lambda: c.copy_(at))


def to(other):
    def make(shape, dt):
        a, c = randn(shape, dt, 3), torch.empty(shape, dtype=DTYPES[other])
        return (lambda: a.to(DTYPES[other])), (lambda: c.copy_(a))
    return make


def reduction(fn):
    def make(shape, dt):
        a = randn(shape, dt, 3)
        return (lambda: fn(a)), None
    return make


def softmax_fwd(shape, dt):
    x, c = randn(shape, dt, 5), torch.empty(shape, dtype=dt)
    return (lambda: torch.softmax(x, -1)), (lambda: torch.ops.aten._softmax.out(x, -1, False, out=c))


def with_grad(make_inputs, forward):
    """fwd+bwd through autograd: grads cleared, forward, backward, as `ops` does."""
    def make(shape, dt):
        leaves, args, dy = make_inputs(shape, dt)

        def call():
            for t in leaves:
                t.grad = None
            y = forward(*args)
            y.backward(dy) if dy is not None else y.backward()
        return call, None
    return make


def softmax_inputs(shape, dt):
    x = randn(shape, dt, 5, True)
    return [x], [x], randn(shape, dt, 6)


def layer_norm_parts(shape, dt, requires_grad):
    d = shape[-1]
    x = randn(shape, dt, 7, requires_grad)
    w = torch.ones(d, dtype=dt, requires_grad=requires_grad)
    b = torch.zeros(d, dtype=dt, requires_grad=requires_grad)
    return x, w, b


def layer_norm_fwd(shape, dt):
    x, w, b = layer_norm_parts(shape, dt, False)
    return (lambda: F.layer_norm(x, (shape[-1],), w, b)), None


def layer_norm_inputs(shape, dt):
    x, w, b = layer_norm_parts(shape, dt, True)
    return [x, w, b], [x, w, b], randn(shape, dt, 8)


def targets(shape):
    rows, classes = shape
    return torch.tensor([(i * 7919) % classes for i in range(rows)], dtype=torch.long)


def cross_entropy_fwd(shape, dt):
    logits, t = randn(shape, dt, 9), targets(shape)
    return (lambda: F.cross_entropy(logits, t)), None


def cross_entropy_inputs(shape, dt):
    logits = randn(shape, dt, 9, True)
    return [logits], [logits, targets(shape)], None


def dropout(shape, dt):
    x = randn(shape, dt, 10)
    return (lambda: torch.native_dropout(x, 0.1, True)), None


def dropout_backward(shape, dt):
    x, dy = randn(shape, dt, 10), randn(shape, dt, 14)
    _, mask = torch.native_dropout(x, 0.1, True)
    c = torch.empty(shape, dtype=dt)
    return ((lambda: torch.ops.aten.native_dropout_backward(dy, mask, 1 / 0.9)),
            (lambda: torch.ops.aten.native_dropout_backward.out(dy, mask, 1 / 0.9, out=c)))


def fused_adamw(shape, dt):
    p, g = randn(shape, dt, 16), randn(shape, dt, 17)
    m, v = torch.zeros(shape, dtype=dt), torch.zeros(shape, dtype=dt)
    step = torch.tensor(1.0)

    def call():
        torch._fused_adamw_([p], [g], [m], [v], [], [step], lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=0.01,
                            eps=1e-8, amsgrad=False, maximize=False)
    return call, None


def scores_op(fn, out_fn=None, seed=11):
    """An op of the attention scores [b, h, t, t] and the causal [t, t] mask."""
    def make(shape, dt):
        s, fut, c = randn(shape, dt, seed), causal(shape[-1]), torch.empty(shape, dtype=dt)
        return (lambda: fn(s, fut)), (None if out_fn is None else (lambda: out_fn(s, fut, c)))
    return make


def attn_and_grad(fn):
    """An op of (dattn, attn, mask): the masked softmax's backward pieces."""
    def make(shape, dt):
        s, fut = randn(shape, dt, 11), causal(shape[-1])
        attn, dattn = torch._masked_softmax(s, fut, -1, 0), randn(shape, dt, 14)
        full = fut.expand(shape)  # PyTorch's _masked_softmax_backward wants the mask at the scores' shape
        return (lambda: fn(dattn, attn, fut, full)), None
    return make


def gelu_backward(shape, dt):
    dy, h, c = randn(shape, dt, 13), randn(shape, dt, 12), torch.empty(shape, dtype=dt)
    return ((lambda: torch.ops.aten.gelu_backward(dy, h, approximate="tanh")),
            (lambda: torch.ops.aten.gelu_backward.grad_input(dy, h, approximate="tanh", grad_input=c)))


def silu_backward(shape, dt):
    dy, h, c = randn(shape, dt, 13), randn(shape, dt, 12), torch.empty(shape, dtype=dt)
    return ((lambda: torch.ops.aten.silu_backward(dy, h)),
            (lambda: torch.ops.aten.silu_backward.grad_input(dy, h, grad_input=c)))


def heads_out(shape, dt):
    """attention's q made contiguous for bmm: [b, t, h, d] viewed as [b, h, t, d]."""
    b, h, t, d = shape
    q = randn([b, t, h, d], dt, 17).transpose(1, 2)
    c = torch.empty(shape, dtype=dt)
    return (lambda: q.contiguous()), (lambda: c.copy_(q))


def heads_out_k(shape, dt):
    """attention's k for q @ k^T: its heads out of qkv [b, t, 3 h d], as [b, h, d, t], made contiguous."""
    b, h, d, t = shape
    qkv = randn([b, t, 3 * h * d], dt, 21)
    k = qkv[:, :, h * d:2 * h * d].view(b, t, h, d).transpose(1, 2).transpose(2, 3)
    c = torch.empty(shape, dtype=dt)
    return (lambda: k.contiguous()), (lambda: c.copy_(k))


def cat_qkv(shape, dt):
    """split's backward: three [b, t, d] gradients joined on the last dim into [b, t, 3 d]."""
    b, t, d3 = shape
    parts = [randn([b, t, d3 // 3], dt, seed) for seed in (18, 19, 20)]
    c = torch.empty(shape, dtype=dt)
    return (lambda: torch.cat(parts, 2)), (lambda: torch.cat(parts, 2, out=c))


def rotary(shape, dt):
    """torchtitan's apply_rotary_emb product: q [b, s, h, d/2] complex64 times freqs_cis [1, s, 1, d/2]
    (complex64 whatever the model's dtype: the row is listed as f32)."""
    q = torch.view_as_complex(randn(list(shape) + [2], torch.float32, 15))
    freqs = torch.view_as_complex(randn([1, shape[1], 1, shape[3], 2], torch.float32, 16))
    c = torch.empty(q.shape, dtype=q.dtype)
    return (lambda: q * freqs), (lambda: torch.mul(q, freqs, out=c))


INF = math.inf


def masked_scores_softmax(shape, dt):
    """softmax of scores already masked with -inf above the diagonal (as `ops` times it)."""
    masked = randn(shape, dt, 11).masked_fill(causal(shape[-1]), -INF)
    c = torch.empty(shape, dtype=dt)
    return (lambda: torch.softmax(masked, -1)), (lambda: torch.ops.aten._softmax.out(masked, -1, False, out=c))


def product(kind, trans_a, trans_b):
    """A matrix product of the GPT step as `ops` times it: shape [m, n, k] ([batch, m, n, k] for bmm),
    an operand transposed in memory made as its transpose and viewed back; addmm adds a bias row."""
    def make(shape, dt):
        *batch, m, n, k = shape

        def operand(rows, cols, transposed, seed):
            if not transposed:
                return randn(batch + [rows, cols], dt, seed)
            return randn(batch + [cols, rows], dt, seed).transpose(-1, -2)
        a, b = operand(m, k, trans_a, 21), operand(k, n, trans_b, 22)
        bias, c = randn([n], dt, 23), torch.empty(batch + [m, n], dtype=dt)
        if kind == "addmm":
            return (lambda: torch.addmm(bias, a, b)), (lambda: torch.addmm(bias, a, b, out=c))
        fn = torch.bmm if kind == "bmm" else torch.mm
        return (lambda: fn(a, b)), (lambda: fn(a, b, out=c))
    return make


def product_dy_head_view(shape, dt):
    """The step's dv through matmul: P [b, h, t, t] transposed, times dy, the gradient of the heads'
    output [b, t, h, d] seen as [b, h, t, d] (shape [b, h, m, n, k] as `ops` lists it)."""
    b, h, m, n, k = shape
    a = randn([b, h, k, m], dt, 21).transpose(-1, -2)
    dy = randn([b, k, h, n], dt, 22).transpose(1, 2)
    c = torch.empty([b, h, m, n], dtype=dt)
    return (lambda: torch.matmul(a, dy)), (lambda: torch.matmul(a, dy, out=c))


OPS = {
    "add  (a + b)": binary(torch.add),
    "mul  (a * b)": binary(torch.mul),
    "gelu": unary(F.gelu, lambda a, c: torch.ops.aten.gelu.out(a, out=c)),
    "relu": unary(torch.relu),
    "add_ (acc += b, in place)": add_inplace,
    "clone": unary(torch.clone, lambda a, c: c.copy_(a)),
    "contiguous (of a transpose)": contiguous,
    "to(bf16)": to("bf16"),
    "to(f32)": to("f32"),
    "sum (all)": reduction(torch.sum),
    "sum (last dim)": reduction(lambda a: a.sum(-1)),
    "sum (dim 0: a bias gradient)": reduction(lambda a: a.sum(0)),
    "mean (all)": reduction(torch.mean),
    "softmax(dim=-1) fwd": softmax_fwd,
    "softmax(dim=-1) fwd+bwd": with_grad(softmax_inputs, lambda x: torch.softmax(x, -1)),
    "layer_norm fwd": layer_norm_fwd,
    "layer_norm fwd+bwd": with_grad(layer_norm_inputs, lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b)),
    "cross_entropy fwd": cross_entropy_fwd,
    "cross_entropy fwd+bwd": with_grad(cross_entropy_inputs, F.cross_entropy),
    "native_dropout (p=0.1)": dropout,
    "native_dropout_backward": dropout_backward,
    "_fused_adamw_ (one parameter)": fused_adamw,
    "mul (scores * scale)": scores_op(lambda s, m: torch.mul(s, 0.125), lambda s, m, c: torch.mul(s, 0.125, out=c)),
    "masked_fill (causal, -inf)": scores_op(lambda s, m: s.masked_fill(m, -INF),
                                            lambda s, m, c: torch.ops.aten.masked_fill.Scalar_out(s, m, -INF, out=c)),
    "softmax(dim=-1) of masked scores": masked_scores_softmax,
    "_masked_softmax (causal [L, S] mask)": scores_op(lambda s, m: torch._masked_softmax(s, m, -1, 0)),
    "_softmax_backward_data": attn_and_grad(lambda d, y, m, full: torch._softmax_backward_data(d, y, -1, d.dtype)),
    "masked_fill (its backward, 0)": scores_op(lambda s, m: s.masked_fill(m, 0.0),
                                               lambda s, m, c: torch.ops.aten.masked_fill.Scalar_out(s, m, 0.0, out=c),
                                               seed=14),
    "_masked_softmax_backward (both above)": attn_and_grad(
        lambda d, y, m, full: torch.ops.aten._masked_softmax_backward(d, y, full, -1)),
    "gelu (tanh)": unary(lambda a: F.gelu(a, approximate="tanh"),
                         lambda a, c: torch.ops.aten.gelu.out(a, approximate="tanh", out=c)),
    "gelu_backward (tanh)": gelu_backward,
    "silu": unary(F.silu, lambda a, c: torch.ops.aten.silu.out(a, out=c)),
    "silu_backward": silu_backward,
    "sum (dim 0: fc1's bias gradient)": reduction(lambda a: a.sum(0)),
    "mul (rotary: complex q * freqs_cis)": rotary,
    "contiguous (q: heads out of [b, t, h, d])": heads_out,
    "contiguous (k: heads out as [b, h, d, t])": heads_out_k,
    "cat (q, k, v gradients, last dim)": cat_qkv,
    "addmm (qkv: b + x @ W^T)": product("addmm", False, True),
    "addmm (fc1: b + x @ W^T)": product("addmm", False, True),
    "addmm (fc2: b + h @ W^T)": product("addmm", False, True),
    "mm (fc1 dx: g @ W)": product("mm", False, False),
    "mm (fc1 dW^T: x^T @ g)": product("mm", True, False),
    "mm (fc2 dW^T: h^T @ g)": product("mm", True, False),
    "bmm (scores: q @ k^T)": product("bmm", False, True),
    "bmm (out: P @ v)": product("bmm", False, False),
    "bmm (dv: P^T @ dy)": product("bmm", True, False),
    "matmul (dv: P^T @ dy, head view)": product_dy_head_view,
}



def median_seconds(f, reps, min_sample_s, now=time.perf_counter):
    """As bench/ops.cpp's median_seconds: a warm-up call, then reps samples of a fixed call count."""
    t0 = now()
    f()
    once = max(now() - t0, 1e-9)
    calls = max(1, int(min_sample_s / once))
    samples = []
    for _ in range(reps):
        a = now()
        for _ in range(calls):
            f()
        samples.append((now() - a) / calls)
    return statistics.median(samples)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def time_row(row, reps, min_sample_s, now, made=None):
    """One row's (torch_ms, torch_out_ms or None). `made`: a one-entry cache of the last row's calls,
    so that --serve, asked for the same row round after round, makes its tensors once."""
    key = (row["op"], row["dtype"], tuple(row["shape"]))
    if made is not None and made.get("key") == key:
        call, out_call = made["calls"]
    else:
        if made is not None:
            made.clear()  # the last row's tensors go before this one's are made
        call, out_call = OPS[row["op"]](key[2], DTYPES[row["dtype"]])
        if made is not None:
            made.update(key=key, calls=(call, out_call))
    ms = median_seconds(call, reps, min_sample_s, now) * 1e3
    out_ms = None if out_call is None else median_seconds(out_call, reps, min_sample_s, now) * 1e3
    return ms, out_ms


def time_rows(listing, only=None):
    """PyTorch's figures for the rows of `ops --list-rows` (`only`: a subset of op names, for tests)."""
    threads, reps, min_sample_s = listing["threads"], listing["reps"], listing["min_sample_s"]
    clock = listing.get("clock", "wall")
    now = CLOCKS[clock]
    torch.set_num_threads(threads)
    unknown = sorted({r["op"] for r in listing["rows"]} - OPS.keys())
    if unknown:
        raise SystemExit(f"torch_ops.py: no PyTorch form for the row(s) {unknown}: add them to OPS")
    out = []
    for r in listing["rows"]:
        if only is not None and r["op"] not in only:
            continue
        ms, out_ms = time_row(r, reps, min_sample_s, now)
        out.append({"op": r["op"], "dtype": r["dtype"], "shape": r["shape"], "torch_ms": ms, "torch_out_ms": out_ms})
        print(f"{r['op']:<40} {r['dtype']:<5} {ms:10.3f} ms" + (f" {out_ms:10.3f} ms (out=)" if out_ms else ""),
              file=sys.stderr)
    return {"torch_version": torch.__version__, "threads": torch.get_num_threads(), "clock": clock,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "rows": out}


def session_error(request):
    """Why the first request of --serve cannot be taken, or None."""
    if not isinstance(request, dict):
        return "the first request must be a JSON object {threads, reps, min_sample_s, clock}"
    for key, ok in (("threads", lambda v: isinstance(v, int) and v >= 1),
                    ("reps", lambda v: isinstance(v, int) and v >= 1),
                    ("min_sample_s", lambda v: isinstance(v, (int, float)) and 0 <= v <= 60),
                    ("clock", lambda v: v in CLOCKS)):
        if key not in request or isinstance(request[key], bool) or not ok(request[key]):
            return f"the first request's '{key}' is missing or out of range: {json.dumps(request)}"
    return None


def row_error(request):
    """Why a row request of --serve cannot be taken, or None."""
    if not isinstance(request, dict) or not isinstance(request.get("op"), str):
        return f"a row request must be a JSON object with 'op', 'dtype' and 'shape': {json.dumps(request)}"
    if request["op"] not in OPS:
        return f"no PyTorch form for the row '{request['op']}': add it to OPS in bench/torch_ops.py"
    if request.get("dtype") not in DTYPES:
        return f"row '{request['op']}': dtype must be one of {sorted(DTYPES)}, got {json.dumps(request.get('dtype'))}"
    shape = request.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape):
        return f"row '{request['op']}': shape must be a list of integers >= 1, got {json.dumps(shape)}"
    return None


def serve(lines, write):
    """`ops --beside`: one JSON request a line, one JSON answer a line (bench/op_rows.h). The first
    request says how to time; each one after names a row, answered with its figures. A request
    that cannot be taken is answered {"error": ...} and ends the session."""
    session = None
    for line in lines:
        try:
            request = json.loads(line)
        except ValueError:
            write({"error": f"not a JSON line: {line.strip()[:200]}"})
            return 1
        if session is None:
            why = session_error(request)
            if why:
                write({"error": why})
                return 1
            session = dict(request, now=CLOCKS[request["clock"]], made={})
            torch.set_num_threads(request["threads"])
            write({"torch_version": torch.__version__, "threads": torch.get_num_threads(), "clock": request["clock"],
                   "cpu_capability": torch.backends.cpu.get_cpu_capability()})
            continue
        why = row_error(request)
        if why:
            write({"error": why})
            return 1
        ms, out_ms = time_row(request, session["reps"], session["min_sample_s"], session["now"], session["made"])
        write({"torch_ms": ms, "torch_out_ms": out_ms})
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", help="the JSON of `ops --list-rows`")
    ap.add_argument("--out", help="where to write PyTorch's figures (JSON for `ops --compare`)")
    ap.add_argument("--serve", action="store_true",
                    help="answer `ops --beside`: a JSON request a line on stdin, a JSON answer a line on stdout")
    args = ap.parse_args()
    if args.serve:
        if args.rows or args.out:
            ap.error("--serve takes its rows on stdin: give neither --rows nor --out")

        def write(answer):
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        sys.exit(serve(sys.stdin, write))
    if not args.rows or not args.out:
        ap.error("give --rows and --out (or --serve)")
    with open(args.rows) as f:
        listing = json.load(f)
    figures = time_rows(listing)
    with open(args.out, "w") as f:
        json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
