# Mirrors the op-level view of torch/utils/checkpoint.py's SAC: the calls its policy is asked about, recorded.
"""record_calls(fn, *args): the op calls a region's policy would be asked about, with their outputs.

What a plan lists for a region, seen from PyTorch: useful to compare a model's op sequence with a
plan's (remat_plan.fingerprint of both), and to write plans for PyTorch models by hand or by a
tool (region_dict).
"""
import torch.utils.checkpoint as ckpt
from torch.utils._python_dispatch import TorchDispatchMode

from .fingerprint import fingerprint
from .policy import seen_outputs


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []
        self.ignored = getattr(ckpt, "SAC_IGNORED_OPS", set())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func not in self.ignored:
            self.calls.append((func._schema.name, seen_outputs(out)))
        return out


def record_calls(fn, *args, **kwargs):
    """[(op, ((dtype, shape), ...)), ...]: every op call of fn(*args, **kwargs) that SAC would ask its policy
    about (all but SAC_IGNORED_OPS), in order. Run it with gradients on, as in training: some ops differ."""
    with _Recorder() as rec:
        fn(*args, **kwargs)
    return rec.calls


def region_dict(name, calls, decide):
    """A plan region (docs/plan_format.md) for recorded calls; decide(op, index, position) -> save | recompute |
    offload, where index counts op's calls and position all calls of the region."""
    counts, out = {}, []
    for position, (op, outputs) in enumerate(calls):
        n = counts.get(op, 0)
        counts[op] = n + 1
        out.append({"op": op, "index": n, "outputs": [{"dtype": d, "shape": list(s)} for d, s in outputs],
                    "decision": decide(op, n, position)})
    return {"name": name, "fingerprint": fingerprint(calls), "calls": out}
