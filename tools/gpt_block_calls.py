#!/usr/bin/env python3
"""Writes tests/nn/data/gpt_block_calls.json (no remat counterpart to run: PyTorch's side): the op calls
of one block of the PyTorch twin's GPT (bench/torch_reference.py, nanoGPT's code) as selective
checkpointing's policy is asked about them (python/remat_plan's record_calls: all but SAC_IGNORED_OPS),
with their outputs' dtypes and shapes, in f32 and bf16 on the CPU.

tests/nn/transformer_test.cpp checks that remat's nn::Block runs the same calls, and
python/tests/test_torch_reference.py that the twin still does: a plan file made by remat names the
twin's calls, so that python/remat_plan applies it call by call (docs/pytorch.md).

  ~/.cache/remat/venv/bin/python tools/gpt_block_calls.py tests/nn/data/gpt_block_calls.json
"""
import json
import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import torch_reference  # noqa: E402
import remat_plan  # noqa: E402

# A small block, every size distinct: batch, sequence, embedding, heads.
SIZES = {"batch": 2, "seq": 8, "embd": 24, "heads": 3}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def block_calls(dtype):
    """[(op, ((dtype, shape), ...)), ...] of the twin's block 0 on a [batch, seq, embd] input that requires grad."""
    torch.manual_seed(0)
    a = types.SimpleNamespace(sdpa=False, layers=1, vocab=16, **{k: v for k, v in SIZES.items()})
    model = torch_reference.GPT(a).to(dtype)
    x = torch.randn(SIZES["batch"], SIZES["seq"], SIZES["embd"], dtype=dtype, requires_grad=True)
    return remat_plan.record_calls(model.layers[0], x)


def as_json(calls):
    return [{"op": op, "outputs": [{"dtype": d, "shape": list(s)} for d, s in outs]} for op, outs in calls]


def write(file_name, sizes, dtypes, calls_of):
    """Writes tests/nn/data/<file_name> (or argv[1]): the PyTorch version, the sizes, and per dtype name the
    calls calls_of(dtype) recorded (tools/llama_block_calls.py writes its file through this too)."""
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "nn", "data", file_name)
    doc = {"pytorch": torch.__version__.split("+")[0], "sizes": sizes,
           **{name: as_json(calls_of(dtype)) for name, dtype in dtypes.items()}}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    write("gpt_block_calls.json", SIZES, DTYPES, block_calls)
