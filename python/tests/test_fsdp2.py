# no PyTorch counterpart: apply_plan before FSDP2's fully_shard (torchtitan's order), one CPU process over gloo.
import copy

import pytest
import torch
import torch.distributed as dist

import remat_plan
from conftest import Net, net_plan_doc, save_mm

fsdp = pytest.importorskip("torch.distributed.fsdp", reason="this PyTorch has no torch.distributed")


@pytest.fixture
def process_group(tmp_path):
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_plan_then_fully_shard_gives_the_gradients_without_checkpointing(process_group):
    torch.manual_seed(0)
    net, x = Net(), torch.randn(3, 5, 8)
    reference = copy.deepcopy(net)
    remat_plan.apply_plan(net, remat_plan.from_dict(net_plan_doc(net, x, save_mm)))
    for block in net.layers:
        fsdp.fully_shard(block)
    fsdp.fully_shard(net)
    net(x).backward()   # each region's calls are checked against the plan: FSDP2's collectives run outside it
    reference(x).backward()
    grads = {k.replace("._checkpoint_wrapped_module", ""): p.grad.full_tensor() for k, p in net.named_parameters()}
    assert grads.keys() == dict(reference.named_parameters()).keys()
    for name, p in reference.named_parameters():
        assert torch.equal(grads[name], p.grad), name
