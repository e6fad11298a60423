# no PyTorch counterpart: the fingerprint of a region's op sequence (docs/plan_format.md), as remat computes it.
"""FNV-1a 64 over the UTF-8 bytes of the canonical text of a region's calls.

The canonical text is, for each call in order, ``<op>(<out>,<out>,...);`` with ``<out>`` =
``<dtype>[<d0>x<d1>x...]`` (a 0-dim output: ``<dtype>[]``); the fingerprint is written
``fnv1a64:`` and 16 lowercase hex digits.
"""

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
PREFIX = "fnv1a64:"


def output_text(dtype, shape):
    """One output as the canonical text writes it: f32[8x128x256], bf16[]."""
    return f"{dtype}[{'x'.join(str(int(d)) for d in shape)}]"


def call_text(op, outputs):
    """One call as the canonical text writes it: aten::mm(f32[1024x768]);"""
    return f"{op}({','.join(output_text(d, s) for d, s in outputs)});"


def fnv1a64(data):
    h = FNV_OFFSET
    for byte in data:
        h ^= byte
        h = (h * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def fingerprint(calls):
    """The fingerprint of a sequence of (op, [(dtype, shape), ...]) calls: 'fnv1a64:' + 16 hex digits."""
    text = "".join(call_text(op, outputs) for op, outputs in calls)
    return f"{PREFIX}{fnv1a64(text.encode('utf-8')):016x}"
