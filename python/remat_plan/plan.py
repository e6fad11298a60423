# no PyTorch counterpart: a remat plan file (docs/plan_format.md) read and checked, as remat's CheckpointPlan::load.
"""load(path) and loads(text): a plan file, checked field by field.

Only the fields that remat_plan uses are checked; fields it does not know are ignored (the
format lets writers add fields).
"""
import json
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from .errors import PlanFormatError, PlanMismatchError
from .fingerprint import PREFIX, fingerprint

FORMAT = "remat-plan"
VERSION = 1
DECISIONS = ("save", "recompute", "offload")
DTYPES = ("f32", "f64", "bf16", "f16", "i64", "bool", "complex64", "complex128")
COUNTERS = ("allocated", "reserved")
DEVICES = ("cpu", "cuda")
PLAN_DTYPES = ("f32", "bf16")


@dataclass(frozen=True)
class Call:
    op: str                                       # "aten::mm", as OpOverload._schema.name
    index: int                                    # among this op's calls in the region, from 0
    outputs: Tuple[Tuple[str, Tuple[int, ...]], ...]  # ((dtype, shape), ...)
    decision: str                                 # save | recompute | offload


@dataclass(frozen=True)
class Region:
    name: str                                     # the module's qualified name: "layers.0"
    fingerprint: str
    calls: Tuple[Call, ...]


@dataclass
class Plan:
    budget_bytes: int
    counter: str
    device: str
    dtype: str
    predicted: Dict[str, int]
    regions: Dict[str, Region]                    # by name, in the file's order
    path: str = "<string>"
    raw: dict = field(default_factory=dict, repr=False)  # the whole document, extra fields included

    def region(self, name):
        try:
            return self.regions[name]
        except KeyError:
            raise PlanMismatchError(f"remat_plan: region '{name}' is not in the plan {self.path} "
                                    f"(its regions: {', '.join(self.regions) or 'none'})") from None


def _fail(where, path, what):
    raise PlanFormatError(f"remat_plan: {path}: {where}: {what}")


def _get(obj, key, kind, where, path):
    if not isinstance(obj, dict):
        _fail(where, path, f"expected an object, got {type(obj).__name__}")
    if key not in obj:
        _fail(f"{where}.{key}" if where else key, path, "missing")
    value = obj[key]
    at = f"{where}.{key}" if where else key
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(at, path, f"expected an integer, got {json.dumps(value)}")
    elif not isinstance(value, kind):
        _fail(at, path, f"expected {kind.__name__}, got {json.dumps(value)}")
    return value


def _choice(obj, key, choices, where, path):
    value = _get(obj, key, str, where, path)
    if value not in choices:
        at = f"{where}.{key}" if where else key
        _fail(at, path, f"unknown value '{value}' (expected {', '.join(choices)})")
    return value


def _outputs(call, where, path):
    outs = []
    for k, out in enumerate(_get(call, "outputs", list, where, path)):
        at = f"{where}.outputs[{k}]"
        dtype = _choice(out, "dtype", DTYPES, at, path)
        shape = _get(out, "shape", list, at, path)
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                _fail(f"{at}.shape", path, f"expected sizes >= 0, got {json.dumps(shape)}")
        outs.append((dtype, tuple(shape)))
    return tuple(outs)


def _region(obj, i, path):
    where = f"regions[{i}]"
    name = _get(obj, "name", str, where, path)
    if not name:
        _fail(f"{where}.name", path, "empty (a region is named by its module's qualified name, as layers.0)")
    fp = _get(obj, "fingerprint", str, where, path)
    calls, counts = [], {}
    for j, c in enumerate(_get(obj, "calls", list, where, path)):
        at = f"{where}.calls[{j}]"
        op = _get(c, "op", str, at, path)
        if "::" not in op:
            _fail(f"{at}.op", path, f"'{op}' names no op (expected a namespaced name, as aten::mm)")
        index = _get(c, "index", int, at, path)
        if index != counts.get(op, 0):
            _fail(f"{at}.index", path, f"{op} #{index}, but this is the region's call #{counts.get(op, 0)} of {op}")
        counts[op] = index + 1
        calls.append(Call(op, index, _outputs(c, at, path), _choice(c, "decision", DECISIONS, at, path)))
    computed = fingerprint((c.op, c.outputs) for c in calls)
    if fp != computed:
        what = "not 'fnv1a64:' and 16 lowercase hex digits" if not (fp.startswith(PREFIX) and len(fp) == 24) else \
            "does not match the region's calls"
        _fail(f"{where}.fingerprint", path, f"'{fp}' {what} (its calls hash to {computed})")
    return Region(name, fp, tuple(calls))


def from_dict(doc, path="<string>"):
    """A Plan from a parsed plan document; PlanFormatError says what is wrong and where."""
    if not isinstance(doc, dict):
        _fail("top level", path, f"expected an object, got {type(doc).__name__}")
    fmt = doc.get("format")
    if fmt != FORMAT:
        _fail("format", path, f"expected '{FORMAT}', got {json.dumps(fmt)}: not a remat plan")
    version = _get(doc, "version", int, "", path)
    if version != VERSION:
        _fail("version", path, f"version {version}; this remat_plan reads version {VERSION}")
    predicted = {k: _get(_get(doc, "predicted", dict, "", path), k, int, "predicted", path)
                 for k in ("peak_bytes", "activation_bytes", "host_peak_bytes")}
    regions = {}
    for i, r in enumerate(_get(doc, "regions", list, "", path)):
        region = _region(r, i, path)
        if region.name in regions:
            _fail(f"regions[{i}].name", path, f"region '{region.name}' appears twice")
        regions[region.name] = region
    return Plan(budget_bytes=_get(doc, "budget_bytes", int, "", path),
                counter=_choice(doc, "counter", COUNTERS, "", path),
                device=_choice(doc, "device", DEVICES, "", path),
                dtype=_choice(doc, "dtype", PLAN_DTYPES, "", path),
                predicted=predicted, regions=regions, path=path, raw=doc)


def loads(text, path="<string>"):
    """A Plan from the text of a plan file."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlanFormatError(f"remat_plan: {path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") \
            from None
    return from_dict(doc, path)


def load(path):
    """Reads and checks a plan file (docs/plan_format.md); PlanFormatError names the file and the field."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return loads(text, str(path))
