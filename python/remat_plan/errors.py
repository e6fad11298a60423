# no PyTorch counterpart: the two errors of remat_plan (a refused plan file, a model that runs other ops than planned).


class PlanFormatError(ValueError):
    """A plan file that load() refuses: another format or version, malformed JSON, a missing or mistyped
    field, an unknown decision, a fingerprint that does not match its calls. The message names the file
    and the field (as regions[0].calls[3].decision)."""


class PlanMismatchError(RuntimeError):
    """The model does not run the ops the plan was made for: raised at the first op call of a region that
    differs from the plan, naming the region, the call's index, and the planned and the seen op and
    output shapes; also for a region the model does not have."""
