# no PyTorch counterpart: small models and plan documents that python/tests build in the test itself.
import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import remat_plan


class Block(nn.Module):
    """A small pre-norm MLP block: layer_norm, linear, gelu, linear, residual add."""

    def __init__(self, c):
        super().__init__()
        self.ln = nn.LayerNorm(c)
        self.fc1 = nn.Linear(c, 2 * c)
        self.fc2 = nn.Linear(2 * c, c)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x)), approximate="tanh"))


class Net(nn.Module):
    def __init__(self, c=8, n=2):
        super().__init__()
        self.layers = nn.ModuleList(Block(c) for _ in range(n))
        self.head = nn.Linear(c, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x).sum()


def record_calls(module, x):
    """The op calls of module(x) as a region's forward sees them (gradients on, as in training)."""
    return remat_plan.record_calls(module, x)


def region_doc(name, calls, decide):
    """A region of a plan document: calls [(op, outputs)], decide(op, index) -> decision."""
    return remat_plan.region_dict(name, calls, lambda op, n, position: decide(op, n))


def plan_doc(regions, **top):
    doc = {"format": "remat-plan", "version": 1, "budget_bytes": 1 << 20, "counter": "allocated", "device": "cpu",
           "dtype": "f32", "predicted": {"peak_bytes": 1, "activation_bytes": 1, "host_peak_bytes": 0},
           "regions": regions}
    doc.update(top)
    return doc


def net_plan_doc(net, x, decide):
    """A plan document for every block of `net`, recorded on input x, decided by decide(op, index)."""
    regions = []
    for i, layer in enumerate(net.layers):
        regions.append(region_doc(f"layers.{i}", record_calls(layer, x), decide))
        with torch.no_grad():
            x = layer(x)
    return plan_doc(regions)


def save_mm(op, n):
    return "save" if op in ("aten::mm", "aten::addmm") else "recompute"


@pytest.fixture
def write_plan(tmp_path):
    def write(doc, name="plan.json"):
        path = tmp_path / name
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return str(path)
    return write
