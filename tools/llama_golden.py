#!/usr/bin/env python3
"""Writes the golden data of tests/nn/llama_golden_test.cpp (no remat counterpart to run: PyTorch's
side): for each case, the PyTorch twin's Llama (bench/torch_llama.py) in f64, its weights, a batch,
the cross-entropy loss and every parameter's gradient, in one safetensors file each.

  python3 -m venv ~/.cache/remat/venv-l42 && ~/.cache/remat/venv-l42/bin/pip install torch numpy safetensors
  ~/.cache/remat/venv-l42/bin/python tools/llama_golden.py tests/nn/data

Weights are drawn in f32 (torchtitan's init) and stored as F32: exact in f64 on both sides, half
the bytes. The batch, loss and gradients are stored as I64 / F64. The configuration is the file's
metadata ("config": JSON with LlamaConfig's field names).
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from torch_llama import Llama  # noqa: E402

BASE = {"n_kv_heads": 0, "ffn_dim_multiplier": 0.0, "norm_eps": 1e-5, "rope_theta": 500000.0,
        "rope_scaling": True, "max_seq_len": 16}
CASES = {
    # debugmodel's head (head_dim 16, theta 500000, Llama 3.1 scaling, n_kv_heads = n_heads), at a size
    # whose golden data stays small (debugmodel's own would be ~75 MB).
    "debugmodel_small": dict(BASE, dim=64, n_layers=2, n_heads=4, vocab_size=64, multiple_of=64),
    # grouped-query attention: 8 query heads over 2 kv heads (n_rep 4)
    "gqa": dict(BASE, dim=32, n_layers=2, n_heads=8, n_kv_heads=2, vocab_size=64, multiple_of=32),
}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/nn/data"
    for name, c in CASES.items():
        torch.manual_seed(1234)
        model = Llama(c, dtype=torch.float64)
        weights = {k: v.detach().clone().float() for k, v in model.named_parameters()}
        model.cast(torch.float64)
        with torch.no_grad():
            for k, p in model.named_parameters():
                p.copy_(weights[k].double())
        g = torch.Generator().manual_seed(99)
        tokens = torch.randint(0, c["vocab_size"], (2, 13), generator=g)
        idx, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        loss = model(idx, targets)
        loss.backward()
        tensors = dict(weights)
        tensors.update({"grad." + k: p.grad.contiguous() for k, p in model.named_parameters()})
        tensors.update({"input.tokens": idx, "input.targets": targets, "loss": loss.detach().reshape(1)})
        path = os.path.join(out_dir, f"llama_golden_{name}.safetensors")
        save_file(tensors, path, metadata={"config": json.dumps(c), "torch": torch.__version__})
        print(f"{path}: loss {loss.item():.17g}, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
