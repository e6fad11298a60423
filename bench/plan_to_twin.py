#!/usr/bin/env python3
# no PyTorch counterpart: a remat plan's decisions carried onto the PyTorch twin's op calls (an experiment).
"""Rewrites a remat plan for bench/torch_reference.py's GPT, whose blocks issue other aten calls.

remat's GPT and the twin keep the same tensors but do not yet run the same op calls (docs/pytorch.md:
remat's linear, matmul and attention composites differ), so a remat plan stops the twin at call 1
with PlanMismatchError. This script aligns them by hand: for each call the plan keeps (save or
offload), the twin's call of the same op (remat's name mapped to PyTorch's: mul.Scalar -> mul,
_masked_softmax -> _softmax, fill_ -> ones, unbind.int -> split) with the same index is kept when its
output has the same shape, else the next one after the last match with the same output shape, else
the same two with as many elements; every other twin call is recomputed. The result is a plan of the twin's own
calls, with the source plan's budget and predictions, for `torch_reference.py --plan`. It is how docs/pytorch.md
measured PyTorch's bytes under remat's plans; it is not what remat_plan does (which never guesses).

  python bench/plan_to_twin.py remat_plan.json twin_plan.json [--layers 4 --embd 256 ...]
"""
import argparse
import json
import math
import os
import sys
import types

import torch
import torch.utils.checkpoint as ckpt
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference  # noqa: E402

REMAT_TO_TORCH = {"aten::mul.Scalar": "aten::mul", "aten::_masked_softmax": "aten::_softmax", "aten::fill_": "aten::ones",
                  "aten::unbind.int": "aten::split"}


def kept_positions(plan_calls, twin_calls):
    """Positions of the twin's calls that stand for the plan's kept calls; and the kept calls left unmatched."""
    kept, unmatched, start = set(), [], 0
    for c in plan_calls:
        if c["decision"] == "recompute":
            continue
        op = REMAT_TO_TORCH.get(c["op"], c["op"])
        shape = tuple(c["outputs"][0]["shape"]) if c["outputs"] else None
        same_op = [k for k in range(len(twin_calls)) if twin_calls[k][0] == op and twin_calls[k][1]]
        # the twin's call of that op with the same index (both sides run as many adds, addmms, bmms, layer norms),
        # if its output agrees; else, after the last match, the same shape (matmul's copies of q, k, v have as many
        # elements as y's copy), then as many elements (remat's bmm runs on 4-D tensors, PyTorch's on 3-D)
        same_shape = lambda k: twin_calls[k][1][0][1] == shape
        same_numel = lambda k: shape is not None and math.prod(twin_calls[k][1][0][1]) == math.prod(shape)
        indexed = [same_op[c["index"]]] if c["index"] < len(same_op) else []
        later = [k for k in same_op if k >= start]
        match = next((k for test in (same_shape, same_numel) for k in indexed + later if test(k)), None)
        if match is None:
            unmatched.append(f"{c['op']} #{c['index']}")
        else:
            kept.add(match)
            start = match + 1
    return kept, unmatched


class _Storages(TorchDispatchMode):
    """Per op call (SAC's view of them): the storages it newly allocates. Keeps every output alive, so that no
    address is reused while recording."""

    def __init__(self):
        super().__init__()
        self.new, self.hold = [], []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.hold.append(out)
        if func not in ckpt.SAC_IGNORED_OPS:
            ptrs = lambda tree: {t.untyped_storage().data_ptr() for t in tree_leaves(tree) if isinstance(t, torch.Tensor)}
            self.new.append(ptrs(out) - ptrs((args, kwargs)))
        return out


def released_by_remat(block, x, calls):
    """Positions of the kept calls whose outputs remat releases when the region's forward ends and PyTorch's SAC
    storage keeps to backward: kept calls from the last one a rerun must reach on (remat's
    first_unreachable_sac_call), whose new storage no saved tensor of backward shares and that is not the
    region's output. Saved tensors are seen with their count of calls before them, as remat's holders are."""
    rec, packs = _Storages(), []

    def pack(t):
        packs.append((t.untyped_storage().data_ptr(), len(rec.new)))
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), rec:
        y = block(x)
    first = {}
    for pos, ptrs in enumerate(rec.new):
        for ptr in ptrs:
            first.setdefault(ptr, pos)
    kept = {ptr for ptr, pos in first.items() if calls[pos] != "recompute"}
    rerun = [before for ptr, before in packs if ptr in first and ptr not in kept]
    reach = max(rerun) if rerun else 0
    read = {ptr for ptr, _ in packs}
    out = y.untyped_storage().data_ptr()
    return [pos for pos in range(reach, len(calls)) if calls[pos] != "recompute" and rec.new[pos]
            and not (rec.new[pos] & read) and out not in rec.new[pos]]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("plan")
    p.add_argument("out")
    p.add_argument("--recompute-released", action="store_true",
                   help="recompute the kept calls remat releases at the end of a region's forward (which PyTorch "
                        "would keep to backward): what a plan exporter should write for them")
    for name, default in (("layers", 4), ("embd", 256), ("heads", 4), ("seq", 128), ("batch", 8), ("vocab", 65)):
        p.add_argument(f"--{name}", type=int, default=default)
    a = p.parse_args()
    remat_plan = torch_reference.import_remat_plan()
    src = json.load(open(a.plan))
    remat_plan.from_dict(src, a.plan)  # refuses a bad file
    dtype = torch.bfloat16 if src["dtype"] == "bf16" else torch.float32
    model = torch_reference.GPT(types.SimpleNamespace(sdpa=False, **{k: getattr(a, k) for k in
                                                                      ("layers", "embd", "heads", "seq", "batch", "vocab")}))
    model = model.to(dtype)
    x = torch.randn(a.batch, a.seq, a.embd, dtype=dtype)
    by_name = {r["name"]: r for r in src["regions"]}
    regions, unmatched = [], []
    for i, block in enumerate(model.layers):
        name = f"layers.{i}"
        if name not in by_name:
            continue
        calls = remat_plan.record_calls(block, x)
        kept, missed = kept_positions(by_name[name]["calls"], calls)
        unmatched += [f"{name}: {m}" for m in missed]
        if a.recompute_released:
            decisions = ["save" if pos in kept else "recompute" for pos in range(len(calls))]
            xr = x.detach().requires_grad_()
            for pos in released_by_remat(block, xr, decisions):
                kept.discard(pos)
                print(f"plan_to_twin: {name}: {calls[pos][0]} at call {pos} recomputed (remat releases it)", file=sys.stderr)
        with torch.no_grad():
            x_next = block(x)
        regions.append(remat_plan.region_dict(name, calls, lambda op, n, pos, kept=kept: "save" if pos in kept
                                              else "recompute"))
        x = x_next
    doc = {k: v for k, v in src.items() if k != "regions"}
    doc["regions"] = regions
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    if unmatched:
        sys.exit(f"plan_to_twin: kept calls with no twin counterpart: {', '.join(unmatched)}")


if __name__ == "__main__":
    main()
