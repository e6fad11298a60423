# Mirrors torchtitan's apply_ac (selective op AC): every module a plan names, wrapped by checkpoint_wrapper.
"""apply_plan(model, plan): wraps each region's module in place, as torchtitan wraps its blocks.

torchtitan's apply_ac replaces each transformer block by
torch.distributed.algorithms._checkpoint.checkpoint_wrapper(block, context_fn=...), a
non-reentrant torch.utils.checkpoint.checkpoint with selective checkpointing, and registers it
under the same name; FSDP2's fully_shard is applied afterwards. apply_plan does the same for
every region of the plan, with remat_plan.context_fn as the context_fn.
"""
import torch.nn as nn
import torch.utils.checkpoint as ckpt

from .errors import PlanMismatchError
from .policy import context_fn

try:
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper as _ptd_wrapper
except ImportError:  # a PyTorch built without torch.distributed
    _ptd_wrapper = None


class _CheckpointWrapper(nn.Module):
    """checkpoint_wrapper's behaviour, for a PyTorch without torch.distributed."""

    def __init__(self, module, **checkpoint_kwargs):
        super().__init__()
        self._checkpoint_wrapped_module = module
        self.checkpoint_kwargs = checkpoint_kwargs

    def forward(self, *args, **kwargs):
        return ckpt.checkpoint(self._checkpoint_wrapped_module, *args, use_reentrant=False,
                               **self.checkpoint_kwargs, **kwargs)


def wrap(module, fn, **checkpoint_kwargs):
    """`module` in a non-reentrant checkpoint whose context_fn is `fn`."""
    if _ptd_wrapper is not None:
        return _ptd_wrapper(module, context_fn=fn, **checkpoint_kwargs)
    return _CheckpointWrapper(module, context_fn=fn, **checkpoint_kwargs)


def apply_plan(model, plan, **checkpoint_kwargs):
    """Wraps every submodule that `plan` names (by qualified name, as model.get_submodule) in a
    non-reentrant checkpoint under the plan's decisions, in place; returns the model. Call it before
    FSDP2's fully_shard (torchtitan's order: AC, then compile, then FSDP). Extra keyword arguments
    (preserve_rng_state, determinism_check, ...) go to torch.utils.checkpoint.checkpoint."""
    names = list(plan.regions)
    for name in names:
        if not name:
            raise PlanMismatchError("remat_plan: a region with an empty name would wrap the model itself; "
                                    "apply it with torch.utils.checkpoint.checkpoint and context_fn")
        nested = [n for n in names if n != name and n.startswith(name + ".")]
        if nested:
            raise PlanMismatchError(f"remat_plan: region '{nested[0]}' lies inside region '{name}': "
                                    f"PyTorch's selective checkpointing does not nest")
        try:
            model.get_submodule(name)
        except AttributeError:
            raise PlanMismatchError(f"remat_plan: the model has no submodule '{name}' (a region of the plan "
                                    f"{plan.path})") from None
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        parent.register_module(child, wrap(model.get_submodule(name), context_fn(plan, name), **checkpoint_kwargs))
    return model
