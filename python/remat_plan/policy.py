# Mirrors torch/utils/checkpoint.py's create_selective_checkpoint_contexts: a context_fn whose SAC policy is a remat plan.
"""context_fn(plan, region): the n-th call of op X in the region is saved or recomputed as the plan says.

PyTorch's SAC asks its policy about every op call of the region during forward (except
SAC_IGNORED_OPS, such as aten::detach); the plan lists those calls in order. A dispatch mode
entered above SAC's caching mode sees each call first, runs it, and compares the op and its
outputs with the plan's call at the same position: the first call that differs raises
PlanMismatchError, before anything is saved under a wrong decision. At the end of the
forward, a region that ran fewer calls than planned raises it too.

Decisions: save -> MUST_SAVE, recompute -> PREFER_RECOMPUTE, offload -> MUST_SAVE (PyTorch's
eager SAC does not offload; one warning per plan says so).

An op is compared by its name without the overload (OpOverload._schema.name): remat names a few
overloads (aten::mul.Scalar, where Python's `x * 0.125` runs aten::mul.Tensor with a wrapped
number); both compute the same outputs, whose dtypes and shapes are compared too.
"""
import warnings

import torch
import torch.utils.checkpoint as ckpt
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .errors import PlanMismatchError
from .fingerprint import output_text

_DTYPE_NAMES = {torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16", torch.float16: "f16",
                torch.int64: "i64", torch.bool: "bool"}


def dtype_name(dtype):
    """The plan's name of a torch dtype (f32, bf16, ...); others by PyTorch's name, which no plan uses."""
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def seen_outputs(out):
    """The (dtype, shape) of each tensor an op call returned, in order."""
    return tuple((dtype_name(t.dtype), tuple(t.shape)) for t in tree_leaves(out) if isinstance(t, torch.Tensor))


def _outputs_text(outputs):
    return "(" + ", ".join(output_text(d, s) for d, s in outputs) + ")"


def _ignored_ops():
    # SAC never asks its policy about these (torch.utils.checkpoint.SAC_IGNORED_OPS, PyTorch >= 2.4).
    return getattr(ckpt, "SAC_IGNORED_OPS", {torch.ops.aten.detach.default})


def base_name(op):
    """An op's name without its overload: aten::mul.Scalar -> aten::mul (as OpOverload._schema.name)."""
    ns, sep, name = op.partition("::")
    return ns + sep + name.split(".", 1)[0] if sep else op


def _decision_policy(decision):
    CP = ckpt.CheckpointPolicy
    return CP.PREFER_RECOMPUTE if decision == "recompute" else CP.MUST_SAVE


class _RegionRun:
    """One forward of a region (and its recomputations): the calls seen so far."""

    def __init__(self, region):
        self.region = region
        self.decisions = [_decision_policy(c.decision) for c in region.calls]
        self.position = 0             # calls checked in the forward
        self.forward_asked = 0        # calls the policy was asked about in the forward
        self.recompute_asked = 0      # ... in the current recomputation

    def mismatch(self, what, seen_op="", seen=()):
        calls = self.region.calls
        k = self.position
        planned = (f"{calls[k].op} #{calls[k].index} -> {_outputs_text(calls[k].outputs)}"
                   if k < len(calls) else f"nothing (the plan has {len(calls)} calls)")
        seen_text = f"{seen_op} -> {_outputs_text(seen)}" if seen_op else "nothing"
        return PlanMismatchError(
            f"remat_plan: region '{self.region.name}', call {k}: {what}; planned {planned}, seen {seen_text}. "
            f"The model does not run the ops the plan was made for (plan it again for this model, "
            f"device and dtype)")

    def check(self, op, outputs):
        calls = self.region.calls
        if self.position >= len(calls):
            raise self.mismatch("the region runs more op calls than the plan lists", op, outputs)
        planned = calls[self.position]
        if base_name(planned.op) != op:
            raise self.mismatch("another op", op, outputs)
        if planned.outputs != outputs:
            raise self.mismatch("other output shapes or dtypes", op, outputs)
        self.position += 1

    def finish(self):
        if self.position != len(self.region.calls):
            raise self.mismatch(f"the region ended after {self.position} op calls")

    def policy(self, ctx, func, *args, **kwargs):
        # SAC asks about the calls in order, the forward's and each recomputation's (which runs the
        # forward's calls again, from the first); the plan lists them in that order.
        op = func._schema.name
        if ctx.is_recompute:
            k = self.recompute_asked
            self.recompute_asked += 1
        else:
            k = self.forward_asked
            self.forward_asked += 1
        calls = self.region.calls
        if k < len(calls) and base_name(calls[k].op) == op:
            return self.decisions[k]
        if not ctx.is_recompute:  # the mode above raises PlanMismatchError for this call, with its outputs
            return ckpt.CheckpointPolicy.PREFER_RECOMPUTE
        raise PlanMismatchError(f"remat_plan: region '{self.region.name}': recomputation call {k} is {op}, which "
                                f"the plan does not list there (the recomputation runs other ops than the forward did)")


class _CheckedForward(TorchDispatchMode):
    """SAC's forward mode, with this mode above it comparing each call with the plan."""

    def __init__(self, run, sac_mode):
        super().__init__()
        self.run, self.sac_mode, self.ignored = run, sac_mode, _ignored_ops()

    def __enter__(self):
        self.sac_mode.__enter__()
        try:
            return super().__enter__()
        except BaseException:
            self.sac_mode.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            super().__exit__(exc_type, exc, tb)
        finally:
            self.sac_mode.__exit__(exc_type, exc, tb)
        if exc_type is None:
            self.run.finish()
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func not in self.ignored:
            self.run.check(func._schema.name, seen_outputs(out))
        return out


class _Recompute:
    """SAC's recompute mode; the policy's recompute counts restart with each recomputation."""

    def __init__(self, run, sac_mode):
        self.run, self.sac_mode = run, sac_mode

    def __enter__(self):
        self.run.recompute_asked = 0
        return self.sac_mode.__enter__()

    def __exit__(self, *exc):
        return self.sac_mode.__exit__(*exc)


def warn_offload(plan):
    """One warning per plan whose regions offload: PyTorch's eager SAC keeps those outputs instead."""
    n = sum(c.decision == "offload" for r in plan.regions.values() for c in r.calls)
    if n and not getattr(plan, "_offload_warned", False):
        plan._offload_warned = True
        warnings.warn(f"remat_plan: the plan {plan.path} offloads {n} op outputs to the host; PyTorch's eager "
                      f"selective checkpointing cannot offload, so they are saved on the device (MUST_SAVE): "
                      f"activations exceed the plan's prediction by their bytes", stacklevel=3)


def context_fn(plan, region):
    """A context_fn for torch.utils.checkpoint.checkpoint(fn, ..., use_reentrant=False, context_fn=...)
    that applies `plan`'s decisions for the region named `region` and raises PlanMismatchError at the
    first op call that differs from the plan."""
    r = plan.region(region)
    warn_offload(plan)

    def make_contexts():
        run = _RegionRun(r)
        forward, recompute = ckpt.create_selective_checkpoint_contexts(run.policy)
        return _CheckedForward(run, forward), _Recompute(run, recompute)
    return make_contexts
