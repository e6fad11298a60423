#!/usr/bin/env python3
"""Writes tests/nn/data/llama_block_calls.json (no remat counterpart to run: PyTorch's side): the op calls
of one block of the PyTorch twin's Llama (bench/torch_llama.py, torchtitan's code) as selective
checkpointing's policy is asked about them (python/remat_plan's record_calls: all but SAC_IGNORED_OPS),
with their outputs' dtypes and shapes, in f32 and bf16 on the CPU, for a grouped-query block.

tests/nn/llama_test.cpp checks that remat's nn::TransformerBlock runs the same calls, and
python/tests/test_torch_reference.py that the twin still does: a plan file made by remat names the
twin's calls, so that python/remat_plan applies it call by call (docs/pytorch.md).

  ~/.cache/remat/venv-l42/bin/python tools/llama_block_calls.py tests/nn/data/llama_block_calls.json
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import torch_llama  # noqa: E402
import remat_plan  # noqa: E402
import gpt_block_calls  # noqa: E402 (as_json, write)
from gpt_block_calls import as_json  # noqa: E402,F401 (python/tests read it here)

# A small grouped-query block, every size distinct: batch, sequence, dim, heads, kv heads, SwiGLU hidden.
SIZES = {"batch": 2, "seq": 16, "dim": 64, "heads": 4, "kv_heads": 2, "ffn_hidden": 96}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def config():
    c = torch_llama.named_config("debugmodel", max_seq_len=SIZES["seq"])
    return dict(c, dim=SIZES["dim"], n_layers=1, n_heads=SIZES["heads"], n_kv_heads=SIZES["kv_heads"],
                vocab_size=32, ffn_hidden=SIZES["ffn_hidden"])


def block_calls(dtype):
    """[(op, ((dtype, shape), ...)), ...] of the twin's block 0 on a [batch, seq, dim] input that requires grad."""
    torch.manual_seed(0)
    model = torch_llama.Llama(config()).cast(dtype)
    block = model.layers["0"]
    block.freqs_cis = model.freqs_cis
    x = torch.randn(SIZES["batch"], SIZES["seq"], SIZES["dim"], dtype=dtype, requires_grad=True)
    return remat_plan.record_calls(block, x)


if __name__ == "__main__":
    gpt_block_calls.write("llama_block_calls.json", SIZES, DTYPES, block_calls)
