#!/usr/bin/env python3
"""The PyTorch side of bench/memory_vs_recompute: the same GPT, strategies and measurements.

Runs with whatever PyTorch is installed. PyTorch 1.13 (Debian's python3-torch, use
/usr/bin/python3) has no selective checkpointing: it runs none, full, full-reentrant and
every2. PyTorch >= 2.4 also runs the SAC strategies through
torch.utils.checkpoint.create_selective_checkpoint_contexts. PyTorch's policies see only the
op, not the module, so 'sac-no-fc2' is emulated by counting linear matmuls (fc2 is the 4th in
a block) -- remat expresses it by scope.

--sdpa (PyTorch >= 2.0) runs F.scaled_dot_product_attention under
sdpa_kernel(SDPBackend.FLASH_ATTENTION) (>= 2.3), i.e. the fused
aten._scaled_dot_product_flash_attention_for_cpu on CPU, which the SAC policies save as they save
matmuls (torchtitan's _save_list names the SDPA ops beside mm); compare it with
`memory_vs_recompute --attention sdpa`. Without it, the math composite remat runs by default.

--plan FILE trains the twin under a plan that remat's planner wrote
(`memory_vs_recompute --budget B --export-plan FILE`, docs/plan_format.md), applied with
python/remat_plan's apply_plan (imported from the installed package, else from python/ beside this
file): the strategy 'plan', whose row also carries the plan's budget and predicted activation bytes.
--plan takes several plans too, comma-separated or a folder (every *.json in it, as
`memory_vs_recompute --sweep N --export-plan DIR` writes them): one row per plan, 'plan@<budget
bytes>', in order of budget, which `memory_vs_recompute --sweep N --compare` matches with its sweep's
budgets. A plan made for other ops than the twin runs stops at the first differing call
(PlanMismatchError).

Writes the JSON that `memory_vs_recompute --compare FILE` reads.

  /usr/bin/python3 bench/torch_reference.py --out /tmp/torch.json
  ./bazelw run //bench:memory_vs_recompute -- --compare /tmp/torch.json

Activation memory: on CUDA, torch.cuda.memory_allocated after forward minus before. On CPU
PyTorch keeps no allocator statistics, so the forward runs once more under the profiler with
profile_memory=True and the net bytes it allocated are summed (the same quantity: bytes
allocated during forward and still alive after it).
"""
import argparse
import contextlib
import functools
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as ckpt


def fused_sdpa():
    """The fused kernel only (torch.nn.attention.sdpa_kernel, PyTorch >= 2.3); else PyTorch's own choice."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return contextlib.nullcontext()
    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def sdpa_ops():
    """The fused attention ops of this PyTorch (CPU and CUDA flash), for the SAC policies."""
    aten = torch.ops.aten
    names = ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention")
    return {getattr(aten, n).default for n in names if hasattr(aten, n)}


class Attention(nn.Module):
    def __init__(self, c, h, use_sdpa):
        super().__init__()
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)
        self.h = h
        self.use_sdpa = use_sdpa

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        if self.use_sdpa:
            with fused_sdpa():
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # the same composite remat runs
            s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            y = torch.matmul(torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1), v)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1 = nn.Linear(c, 4 * c)
        self.fc2 = nn.Linear(4 * c, c)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, c, h, use_sdpa):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(c), Attention(c, h, use_sdpa)
        self.ln2, self.mlp = nn.LayerNorm(c), MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte = nn.Embedding(a.vocab, a.embd)
        self.wpe = nn.Embedding(a.seq, a.embd)
        self.layers = nn.ModuleList(Block(a.embd, a.heads, a.sdpa) for _ in range(a.layers))
        self.ln_f = nn.LayerNorm(a.embd)
        self.lm_head = nn.Linear(a.embd, a.vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as remat's default
        self.strategy = None
        self.init_weights(a.layers)

    def init_weights(self, n_layer):
        # nanoGPT's _init_weights, as remat's GPT::init_weights (nn/gpt.cpp): weights ~ N(0, 0.02), biases 0,
        # the residual projections ~ N(0, 0.02 / sqrt(2 n_layer)). PyTorch's module defaults (N(0, 1) embeddings
        # tied to the head) would start from a loss many times ln(vocab), so the two would train different models.
        residual = {id(b.attn.proj.weight) for b in self.layers} | {id(b.mlp.fc2.weight) for b in self.layers}
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    std = 0.02 / math.sqrt(2 * n_layer) if id(m.weight) in residual else 0.02
                    nn.init.normal_(m.weight, 0.0, std)
                    if getattr(m, "bias", None) is not None:
                        nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for i, block in enumerate(self.layers):
            x = self.strategy(i, block, x) if self.strategy else block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))


def has_sac():
    return hasattr(ckpt, "create_selective_checkpoint_contexts")


def sac_context(policy_factory):
    def context_fn():
        return ckpt.create_selective_checkpoint_contexts(policy_factory())
    return context_fn


def policies():
    """The SAC policies of bench/strategies.cpp, in PyTorch's terms (PyTorch >= 2.4)."""
    CP = ckpt.CheckpointPolicy
    aten = torch.ops.aten
    sdpa = sdpa_ops()  # never called under the math composite
    mm_like = {aten.mm.default, aten.addmm.default, aten.bmm.default} | sdpa

    def save_mm():
        return lambda ctx, op, *a, **k: CP.MUST_SAVE if op in mm_like else CP.PREFER_RECOMPUTE

    def titan():
        linear = {"n": 0}
        bmm = {"n": 0}

        def policy(ctx, op, *a, **k):
            if op in (aten.mm.default, aten.addmm.default):
                linear["n"] += 1
                return CP.MUST_SAVE if (linear["n"] - 1) % 2 == 0 else CP.PREFER_RECOMPUTE
            if op == aten.bmm.default:
                bmm["n"] += 1
                return CP.MUST_SAVE if bmm["n"] == 2 else CP.PREFER_RECOMPUTE
            return CP.MUST_SAVE if op in sdpa else CP.PREFER_RECOMPUTE
        return policy

    def no_last_linear(linears_per_block):
        """Every matmul but the MLP's last projection, the block's last linear: the GPT's fc2 (4 linears:
        qkv, proj, fc1, fc2), the Llama's w2 (7: wq, wk, wv, wo, w1, w3, w2)."""
        def make():
            linear = {"n": 0}

            def policy(ctx, op, *a, **k):
                if op in (aten.mm.default, aten.addmm.default):
                    linear["n"] += 1
                    return CP.PREFER_RECOMPUTE if linear["n"] % linears_per_block == 0 else CP.MUST_SAVE
                return CP.MUST_SAVE if op == aten.bmm.default or op in sdpa else CP.PREFER_RECOMPUTE
            return policy
        return make

    def megatron():
        core = {aten.bmm.default, aten._softmax.default, aten.masked_fill.Scalar, aten.mul.Tensor,
                aten.triu.default, aten.ones.default, aten.clone.default, aten._unsafe_view.default,
                aten.expand.default, aten.view.default, aten.transpose.int} | sdpa
        linear = {"n": 0}
        core_out = {"bmm": 0, "done": False}

        def policy(ctx, op, *a, **k):
            if op in (aten.mm.default, aten.addmm.default):
                linear["n"] += 1
                return CP.PREFER_RECOMPUTE if linear["n"] % 2 == 0 else CP.PREFER_SAVE  # proj, fc2 recomputed
            if op == aten.bmm.default:
                core_out["bmm"] += 1
            if (op == aten.bmm.default and core_out["bmm"] % 2 == 0) or op in sdpa:
                core_out["done"] = True  # the core's last op: scores x V, or the fused attention
            if op == aten.clone.default and core_out["done"]:
                # y.transpose(1, 2).reshape's copy, attn.proj's input: the attention core's output, which
                # Megatron keeps (remat: scope layers.N.attn, outside attn.core). matmul's copies of q, k and
                # v before it are the core's, recomputed.
                core_out["done"] = False
                return CP.PREFER_SAVE
            if op in core or op == aten.add.Tensor:
                return CP.PREFER_RECOMPUTE
            return CP.PREFER_SAVE
        return policy

    return {"sac-mm": save_mm, "sac-titan": titan, "sac-no-fc2": no_last_linear(4), "sac-no-w2": no_last_linear(7),
            "sac-megatron": megatron}


def strategy_fn(name):
    """Returns (block runner, reentrant) for a strategy name, or None if unavailable here."""
    if name == "none":
        return None, False
    if name in ("full", "full-reentrant", "every2"):
        reentrant = name == "full-reentrant"

        def run(i, block, x):
            if name == "every2" and i % 2 == 1:
                return block(x)
            return ckpt.checkpoint(block, x, use_reentrant=reentrant)
        return run, reentrant
    if not has_sac():
        raise NotImplementedError(name)
    factory = policies()[name]

    def run(i, block, x):
        return ckpt.checkpoint(block, x, use_reentrant=False, context_fn=sac_context(factory))
    return run, False


def import_remat_plan():
    """python/remat_plan: the installed package, else the one beside this file (it needs only torch)."""
    try:
        import remat_plan
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
        import remat_plan
    return remat_plan


def plan_files(arg):
    """--plan's files: comma-separated, a folder standing for every *.json in it (sorted)."""
    paths = []
    for item in (p for p in arg.split(",") if p):
        if os.path.isdir(item):
            found = sorted(os.path.join(item, n) for n in os.listdir(item) if n.endswith(".json"))
            if not found:
                sys.exit(f"--plan {item}: the folder holds no *.json plan file")
            paths += found
        else:
            paths.append(item)
    if not paths:
        sys.exit(f"--plan {arg!r}: no plan file named")
    return paths


def load_plans(arg, a):
    """The plans of --plan by row name: 'plan' for one file, else 'plan@<budget bytes>' in order of budget (one
    plan per budget: two files for the same budget are refused)."""
    plans = [load_plan(path, a) for path in plan_files(arg)]
    if len(plans) == 1:
        return {"plan": plans[0]}
    by_budget = {}
    for plan in plans:
        if plan.budget_bytes in by_budget:
            sys.exit(f"--plan: {by_budget[plan.budget_bytes].path} and {plan.path} are both plans for "
                     f"{plan.budget_bytes} bytes; one row per budget (give one of them)")
        by_budget[plan.budget_bytes] = plan
    return {f"plan@{budget}": by_budget[budget] for budget in sorted(by_budget)}


def load_plan(path, a):
    """A plan of --plan, checked against the run's dtype (its shapes are checked call by call as it runs)."""
    remat_plan = import_remat_plan()
    try:
        plan = remat_plan.load(path)
    except (OSError, remat_plan.PlanFormatError) as e:
        sys.exit(f"--plan {path}: {e}")
    if plan.dtype != a.dtype:
        sys.exit(f"--plan {path}: the plan is for dtype {plan.dtype}; run with --dtype {plan.dtype} (got {a.dtype})")
    if plan.device != a.device:
        print(f"--plan {path}: the plan was made for {plan.device}, this run is on {a.device}", file=sys.stderr)
    return plan


def make_optimizer(model, a):
    """AdamW, fused when asked and this PyTorch supports it here (records what ran in a.optimizer_used)."""
    if a.optimizer == "adamw-fused":
        try:
            opt = torch.optim.AdamW(model.parameters(), lr=a.lr, fused=True)
            a.optimizer_used = "adamw-fused"
            return opt
        except (RuntimeError, TypeError, ValueError) as e:  # 1.13: no fused CPU AdamW
            print(f"fused AdamW unavailable ({e}); using the default AdamW", file=sys.stderr)
    a.optimizer_used = "adamw"
    return torch.optim.AdamW(model.parameters(), lr=a.lr)


def activation_bytes(model, idx, targets, device):
    model.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        loss = model(idx, targets)
        after = torch.cuda.memory_allocated()
        loss.backward()
        return after - before, torch.cuda.max_memory_allocated()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss = model(idx, targets)
    net = sum(e.self_cpu_memory_usage for e in prof.events())
    loss.backward()
    return net, 0


def print_op_profile(name, profiler, steps, limit=25):
    """The aten ops by self CPU time per step, as memory_vs_recompute --profile-ops lists remat's."""
    rows = [e for e in profiler.key_averages() if e.key.startswith("aten::") and e.self_cpu_time_total > 0]
    rows.sort(key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in rows)
    print(f"{name}: its ops per timed step ({steps} steps; self CPU time, torch.profiler)")
    print(f"{'op (per step)':48s} {'calls':>10s} {'ms':>10s} {'%':>7s}")
    def line(op, calls, us):
        print(f"{op:48s} {calls / steps:10.1f} {us / steps / 1e3:10.3f} {100 * us / total if total else 0:6.1f}%")
    for e in rows[:limit]:
        line(e.key, e.count, e.self_cpu_time_total)
    if len(rows) > limit:
        line(f"({len(rows) - limit} other ops)", sum(e.count for e in rows[limit:]),
             sum(e.self_cpu_time_total for e in rows[limit:]))
    line("total", sum(e.count for e in rows), total)
    print()


class ServeRequestError(Exception):
    """A request of --serve that cannot be taken (answered {"error": ...})."""


class RequestArgumentParser(argparse.ArgumentParser):
    """--serve's first request's "args": a bad flag is an answer, not an exit."""

    def error(self, message):
        raise ServeRequestError(f"the session's args: {message}")


def argument_parser(cls=argparse.ArgumentParser):
    p = cls(description=__doc__.splitlines()[0])
    # The GPT's defaults (4, 256, 4, 65) or, with --model llama, the --config's sizes: given, they override.
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--embd", type=int, default=None)
    p.add_argument("--heads", type=int, default=None)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=None)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads (1 avoids fighting OpenBLAS's own threads on 2-core machines)")
    p.add_argument("--strategies", default=None,
                   help="comma-separated (default: none,full,full-reentrant,every2,sac-mm,sac-titan,sac-no-fc2,"
                        "sac-megatron; with --plan: plan)")
    p.add_argument("--plan", default="",
                   help="a remat plan file (docs/plan_format.md): the strategy 'plan'; or several, comma-separated "
                        "or a folder (every *.json in it): a row 'plan@<budget bytes>' each")
    p.add_argument("--sdpa", action="store_true", help="use F.scaled_dot_product_attention (PyTorch >= 2.0)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--optimizer", default="adamw-fused", choices=["adamw-fused", "adamw"],
                   help="adamw-fused: torch.optim.AdamW(fused=True) where this PyTorch has it on the device "
                        "(CPU: 2.4 and later), else the default; as memory_vs_recompute --optimizer")
    p.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                   help="cpu: the process's CPU time per step (time.process_time), which time slices given to "
                        "other processes do not inflate; as memory_vs_recompute --clock cpu (use with --threads 1)")
    p.add_argument("--model", default="gpt", choices=["gpt", "llama"],
                   help="llama: the twin of remat's nn::Llama (bench/torch_llama.py, torchtitan's Llama 3) under "
                        "--config, with max_seq_len --seq; --layers/--embd/--heads/--vocab override the config's "
                        "(as memory_vs_recompute --model llama does)")
    p.add_argument("--config", default="debugmodel", choices=["debugmodel", "llama3_8b"])
    p.add_argument("--kv-heads", type=int, default=None, help="llama: n_kv_heads (default: the config's)")
    p.add_argument("--ffn", type=int, default=None, help="llama: the SwiGLU hidden size as given (default: the "
                                                         "config's rule)")
    p.add_argument("--profile-ops", action="store_true",
                   help="after each strategy, its aten ops by self CPU time per timed step (torch.profiler's "
                        "key_averages; memory_vs_recompute --profile-ops prints remat's)")
    p.add_argument("--out", default="")
    p.add_argument("--serve", action="store_true",
                   help="answer `memory_vs_recompute --beside`: the session (its flags) as the first JSON line on "
                        "stdin, then one training step of a strategy a line, each answered with one JSON line")
    return p


def configure(a):
    """Completes the parsed flags (the model's sizes, the strategies); returns (row names, plans by row name).
    Exits with one line on a bad combination."""
    if a.model == "llama":
        from torch_llama import ffn_hidden_dim, named_config
        a.llama = named_config(a.config, a.seq)
        for flag, key in (("layers", "n_layers"), ("embd", "dim"), ("heads", "n_heads"), ("vocab", "vocab_size"),
                          ("kv_heads", "n_kv_heads"), ("ffn", "ffn_hidden")):
            if getattr(a, flag) is not None:
                a.llama[key] = getattr(a, flag)
        a.layers, a.embd, a.heads, a.vocab = (a.llama[k] for k in ("n_layers", "dim", "n_heads", "vocab_size"))
        a.kv_heads = a.llama["n_kv_heads"] or a.heads
        a.ffn = a.llama.get("ffn_hidden") or ffn_hidden_dim(a.embd, a.llama["multiple_of"], a.llama["ffn_dim_multiplier"])
    else:
        if a.kv_heads is not None or a.ffn is not None:
            sys.exit("--kv-heads and --ffn are the Llama's (--model llama)")
        for flag, default in (("layers", 4), ("embd", 256), ("heads", 4), ("vocab", 65)):
            if getattr(a, flag) is None:
                setattr(a, flag, default)
    if a.strategies is None:
        a.strategies = "plan" if a.plan else ("none,full,full-reentrant,every2,sac-mm,sac-titan,"
                                              + ("sac-no-w2" if a.model == "llama" else "sac-no-fc2,sac-megatron"))
    if "plan" in a.strategies.split(",") and not a.plan:
        sys.exit("the strategy 'plan' needs --plan FILE")
    plans = load_plans(a.plan, a) if a.plan else {}
    # 'plan' in --strategies: a row per plan of --plan
    names = [n for s in a.strategies.split(",") for n in (list(plans) if s == "plan" else [s])]
    if a.sdpa and not hasattr(F, "scaled_dot_product_attention"):
        sys.exit(f"--sdpa needs PyTorch >= 2.0 (F.scaled_dot_product_attention); this is {torch.__version__}")
    return names, plans


def token_batch(a, device):
    """The token ids and targets from a fixed seed (the same batch every step, as remat's)."""
    g = torch.Generator().manual_seed(42)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=g)
    return tokens[:, :-1].contiguous().to(device), tokens[:, 1:].contiguous().to(device)


def build(a, run, plan, device, dtype):
    """The model under one strategy's block runner (or plan), seeded as remat's, and its optimizer."""
    torch.manual_seed(1337)
    if a.model == "llama":
        from torch_llama import Llama
        model = Llama(a.llama, dtype=dtype).to(device=device).cast(dtype)
    else:
        model = GPT(a).to(device=device, dtype=dtype)
    model.strategy = run
    if plan is not None:
        import_remat_plan().apply_plan(model, plan)
    return model, make_optimizer(model, a)


def step_clock(a):
    """The clock a step is timed on: --clock cpu, this process's CPU time; else the wall."""
    return time.process_time if a.clock == "cpu" else time.perf_counter


def train_step(model, opt, idx, targets, device, now):
    """One training step: (its time in ms on `now`'s clock, the loss)."""
    model.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = now()
    out = model(idx, targets)
    out.backward()
    opt.step()
    loss = out.item()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (now() - t0) * 1e3, loss


def serve(lines, write):
    """`memory_vs_recompute --beside`: one JSON request a line, one JSON answer a line. The first request,
    {"args": [flags]}, sets the session as these flags set a run (no --profile-ops, --out or --serve; one --plan
    file at most, its row 'plan'): one model and optimizer per strategy, answered {"framework", "strategies"}.
    Each request after, {"strategy": name}, takes one training step of that strategy's model, answered {"ms",
    "loss"}. A request that cannot be taken (a plan whose calls differ from the model's, too) is answered
    {"error": ...} and ends the session."""
    sessions, a = None, None
    for line in lines:
        try:
            try:
                request = json.loads(line)
            except ValueError:
                raise ServeRequestError(f"not a JSON line: {line.strip()[:200]}")
            if sessions is None:
                args = request.get("args") if isinstance(request, dict) else None
                if not isinstance(args, list) or not all(isinstance(x, str) for x in args):
                    raise ServeRequestError("the first request must be a JSON object {\"args\": [flags as strings]}: "
                                            + json.dumps(request)[:200])
                a = argument_parser(RequestArgumentParser).parse_args(args)
                for flag, given in (("--profile-ops", a.profile_ops), ("--out", a.out), ("--serve", a.serve)):
                    if given:
                        raise ServeRequestError(f"the session's args: {flag} is not for --serve (it answers steps)")
                try:
                    names, plans = configure(a)
                except SystemExit as e:
                    raise ServeRequestError(f"the session's args: {e.code}")
                if len(plans) > 1:
                    raise ServeRequestError("the session's args: --plan takes one plan file for --serve "
                                            "(its row 'plan')")
                torch.set_num_threads(a.threads)
                device = torch.device(a.device)
                dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
                idx, targets = token_batch(a, device)
                now = step_clock(a)
                sessions = {}
                for name in names:
                    if name in plans:
                        sessions[name] = build(a, None, plans[name], device, dtype)
                        continue
                    try:
                        run, _ = strategy_fn(name)
                    except NotImplementedError:
                        raise ServeRequestError(f"strategy '{name}': PyTorch {torch.__version__} has no selective "
                                                "checkpointing")
                    except KeyError:
                        raise ServeRequestError(f"strategy '{name}': no such strategy here")
                    sessions[name] = build(a, run, None, device, dtype)
                write({"framework": f"pytorch {torch.__version__}", "strategies": names,
                       "threads": torch.get_num_threads(), "clock": a.clock})
                continue
            name = request.get("strategy") if isinstance(request, dict) else None
            if name not in sessions:
                raise ServeRequestError(f"a step request must be {{\"strategy\": one of {list(sessions)}}}: "
                                        + json.dumps(request)[:200])
            try:
                ms, loss = train_step(*sessions[name], idx, targets, device, now)
            except RuntimeError as e:  # remat_plan's PlanMismatchError: the plan is for other calls
                if type(e).__name__ != "PlanMismatchError":
                    raise
                raise ServeRequestError(f"strategy '{name}': {e}")
            write({"ms": ms, "loss": loss})
        except ServeRequestError as e:
            write({"error": str(e)})
            return 1
    return 0


def main():
    a = argument_parser().parse_args()
    if a.serve:
        if len(sys.argv) > 2:
            sys.exit("--serve takes its session's flags on stdin (the first JSON line): give no other flag")

        def write(answer):
            sys.stdout.write(json.dumps(answer, allow_nan=False) + "\n")
            sys.stdout.flush()
        sys.exit(serve(sys.stdin, write))
    names, plans = configure(a)
    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    idx, targets = token_batch(a, device)

    results = []
    for name in names:
        plan = plans.get(name)
        try:
            run, reentrant = strategy_fn(name) if plan is None else (None, False)
        except NotImplementedError:
            print(f"{name:15s} skipped: PyTorch {torch.__version__} has no selective checkpointing", file=sys.stderr)
            continue
        model, opt = build(a, run, plan, device, dtype)
        times, loss = [], float("nan")
        now = step_clock(a)
        profiler = None
        for step in range(a.warmup + a.steps):
            if a.profile_ops and step == a.warmup:
                profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                profiler.__enter__()
            try:
                ms, loss = train_step(model, opt, idx, targets, device, now)
            except RuntimeError as e:  # remat_plan's PlanMismatchError: name the file of several
                if plan is not None and len(plans) > 1 and type(e).__name__ == "PlanMismatchError":
                    sys.exit(f"--plan: {e} (the plan {plan.path})")
                raise
            if step >= a.warmup:
                times.append(ms)
        if profiler is not None:
            profiler.__exit__(None, None, None)
            print_op_profile(name, profiler, a.steps)
        act, peak = activation_bytes(model, idx, targets, device)
        results.append({"strategy": name, "reentrant": reentrant, "activation_bytes": int(act), "peak_bytes": int(peak),
                        "step_ms": times, "median_ms": statistics.median(times), "final_loss": loss})
        predicted = ""
        if plan is not None:
            results[-1].update({"plan": plan.path, "budget_bytes": plan.budget_bytes,
                                "predicted_activation_bytes": plan.predicted["activation_bytes"],
                                "predicted_peak_bytes": plan.predicted["peak_bytes"]})
            if plan.predicted["activation_bytes"] > 0:
                predicted = (f"  (remat predicted {plan.predicted['activation_bytes'] / 2**20:.1f} MiB, measured/predicted "
                             f"{act / plan.predicted['activation_bytes']:.4f})")
        print(f"{name:15s} act {act / 2**20:8.1f} MiB  step {statistics.median(times):8.1f} ms  loss {loss:.6f}{predicted}",
              file=sys.stderr)

    doc = {"framework": f"pytorch {torch.__version__}",
           "config": {"model": a.model,
                      **({"llama_config": a.config, "kv_heads": a.kv_heads, "ffn_hidden": a.ffn} if a.model == "llama"
                         else {}),
                      "layers": a.layers, "embd": a.embd, "heads": a.heads, "seq": a.seq, "batch": a.batch,
                      "vocab": a.vocab, "device": a.device, "dtype": a.dtype, "attention": "sdpa" if a.sdpa else "math",
                      "steps": a.steps, "warmup": a.warmup,
                      "threads": a.threads, "clock": a.clock,
                      "optimizer": getattr(a, "optimizer_used", a.optimizer)},
           "results": results}
    # NaN or Infinity is not JSON, and --compare could not read it: one line, exit 1 (issue 45).
    try:
        text = json.dumps(doc, indent=1, allow_nan=False)
    except ValueError as e:
        sys.exit(f"error: results.json: a figure is NaN or Inf ({e}); the file is not written")
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        if type(e).__name__ != "PlanMismatchError":  # remat_plan's: the model runs other ops than the plan lists
            raise
        sys.exit(f"--plan: {e}")
