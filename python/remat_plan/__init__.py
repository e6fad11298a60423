# no PyTorch counterpart: remat_plan, which makes torch.utils.checkpoint's selective checkpointing follow a remat plan.
"""Apply a remat checkpoint plan (docs/plan_format.md) to a PyTorch model.

    plan = remat_plan.load("plan.json")
    remat_plan.apply_plan(model, plan)       # or, per region:
    torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False,
                                      context_fn=remat_plan.context_fn(plan, "layers.0"))
"""
from .apply import apply_plan
from .errors import PlanFormatError, PlanMismatchError
from .fingerprint import fingerprint
from .plan import Call, Plan, Region, from_dict, load, loads
from .policy import context_fn, dtype_name
from .record import record_calls, region_dict

__all__ = ["Call", "Plan", "PlanFormatError", "PlanMismatchError", "Region", "apply_plan", "context_fn",
           "dtype_name", "fingerprint", "from_dict", "load", "loads", "record_calls", "region_dict"]
__version__ = "0.1.0"
