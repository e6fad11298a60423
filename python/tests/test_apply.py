# no PyTorch counterpart: remat_plan.context_fn and apply_plan under torch.utils.checkpoint, on small models.
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
import torch.utils.checkpoint as ckpt
from torch.utils._python_dispatch import TorchDispatchMode

import remat_plan
from conftest import Net, net_plan_doc, save_mm


def make(seed=0, c=8, n=2):
    torch.manual_seed(seed)
    return Net(c, n), torch.randn(3, 5, c)


class _Count(TorchDispatchMode):
    def __init__(self, name):
        super().__init__()
        self.name, self.n = name, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += func._schema.name == self.name
        return func(*args, **(kwargs or {}))


def addmm_calls_in_backward(net, x):
    """aten::addmm calls that backward runs: the recomputed linears (backward's own formulas use mm)."""
    loss = net(x)
    with _Count("aten::addmm") as count:
        loss.backward()
    return count.n


def planned(decide, seed=0):
    net, x = make(seed)
    plan = remat_plan.from_dict(net_plan_doc(net, x, decide))
    remat_plan.apply_plan(net, plan)
    return net, x


def test_decisions_are_applied_call_by_call():
    # Recomputation stops early once backward has what it needs: fc2's output (aten::addmm #1) is never needed
    # (the residual add saves nothing), so only fc1's aten::addmm #0 can be rerun, once per block.
    assert addmm_calls_in_backward(*planned(lambda op, n: "recompute")) == 2
    assert addmm_calls_in_backward(*planned(save_mm)) == 0
    assert addmm_calls_in_backward(*planned(lambda op, n: "recompute" if (op, n) == ("aten::addmm", 0)
                                            else "save")) == 2
    assert addmm_calls_in_backward(*planned(lambda op, n: "recompute" if (op, n) == ("aten::addmm", 1)
                                            else "save")) == 0


def test_offload_is_saved_with_one_warning():
    net, x = make()
    plan = remat_plan.from_dict(net_plan_doc(net, x, lambda op, n: "offload" if op == "aten::addmm" else "recompute"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        remat_plan.apply_plan(net, plan)
    offload = [w for w in caught if "offload" in str(w.message)]
    assert len(offload) == 1
    assert "offloads 4 op outputs" in str(offload[0].message) and "MUST_SAVE" in str(offload[0].message)
    assert addmm_calls_in_backward(net, x) == 0


@pytest.mark.parametrize("decide", [lambda op, n: "recompute", save_mm, lambda op, n: "save",
                                    lambda op, n: "save" if n % 2 else "recompute"])
def test_gradients_are_bitwise_those_without_checkpointing(decide):
    reference, x = make(seed=3)
    net = copy.deepcopy(reference)
    remat_plan.apply_plan(net, remat_plan.from_dict(net_plan_doc(net, x, decide)))
    reference(x).backward()
    net(x).backward()
    ref_grads = dict(reference.named_parameters())
    # checkpoint_wrapper keeps the parameters' names in state_dict; named_parameters shows the wrapper
    net_grads = {k.replace("._checkpoint_wrapped_module", ""): p for k, p in net.named_parameters()}
    assert ref_grads.keys() == net_grads.keys()
    for name, p in ref_grads.items():
        assert torch.equal(p.grad, net_grads[name].grad), name


def mismatch(net, x):
    with pytest.raises(remat_plan.PlanMismatchError) as e:
        net(x).backward()
    return str(e.value)


def test_other_shapes_raise_at_the_first_call():
    net, x = planned(save_mm)
    message = mismatch(net, torch.randn(2, 5, 8))
    assert "region 'layers.0', call 0: other output shapes or dtypes" in message
    assert "planned aten::native_layer_norm #0 -> (f32[3x5x8], f32[3x5x1], f32[3x5x1])" in message
    assert "seen aten::native_layer_norm -> (f32[2x5x8], f32[2x5x1], f32[2x5x1])" in message


def test_another_op_raises_naming_planned_and_seen():
    net, x = planned(save_mm)
    block = net.layers[1]._checkpoint_wrapped_module
    block.forward = lambda h: h + block.fc2(F.relu(block.fc1(block.ln(h))))
    message = mismatch(net, x)
    assert "region 'layers.1', call 5: another op" in message
    assert "planned aten::gelu #0 -> (f32[3x5x16])" in message and "seen aten::relu -> (f32[3x5x16])" in message


def test_more_or_fewer_calls_than_planned_raise():
    net, x = make()
    doc = net_plan_doc(net, x, save_mm)
    calls = doc["regions"][0]["calls"]
    short = copy.deepcopy(doc)
    short["regions"][0]["calls"] = calls[:-1]
    short["regions"][0]["fingerprint"] = remat_plan.fingerprint(
        [(c["op"], [(o["dtype"], o["shape"]) for o in c["outputs"]]) for c in calls[:-1]])
    n = len(calls)
    fn = remat_plan.context_fn(remat_plan.from_dict(short), "layers.0")
    with pytest.raises(remat_plan.PlanMismatchError, match=rf"call {n - 1}: the region runs more op calls than "
                                                           rf"the plan lists; planned nothing \(the plan has {n - 1}"
                                                           rf" calls\), seen aten::add"):
        ckpt.checkpoint(net.layers[0], x, use_reentrant=False, context_fn=fn)

    longer = copy.deepcopy(doc)
    longer["regions"][0]["calls"].append(dict(calls[0], index=1))
    longer["regions"][0]["fingerprint"] = remat_plan.fingerprint(
        [(c["op"], [(o["dtype"], o["shape"]) for o in c["outputs"]]) for c in longer["regions"][0]["calls"]])
    fn = remat_plan.context_fn(remat_plan.from_dict(longer), "layers.0")
    with pytest.raises(remat_plan.PlanMismatchError, match=rf"call {n}: the region ended after {n} op calls; "
                                                           rf"planned aten::native_layer_norm #1"):
        ckpt.checkpoint(net.layers[0], x, use_reentrant=False, context_fn=fn)


@pytest.mark.parametrize("name, expected", [
    ("blocks.1", r"the model has no submodule 'blocks\.1'"),
    ("layers.0.fc1", r"region 'layers\.0\.fc1' lies inside region 'layers\.0': PyTorch's selective checkpointing "
                     r"does not nest")])
def test_apply_plan_refuses_regions_it_cannot_wrap(name, expected):
    net, x = make()
    doc = net_plan_doc(net, x, save_mm)
    doc["regions"][1]["name"] = name
    with pytest.raises(remat_plan.PlanMismatchError, match=expected):
        remat_plan.apply_plan(net, remat_plan.from_dict(doc))


def test_apply_plan_keeps_the_state_dict_names():
    net, x = make()
    names = list(net.state_dict())
    remat_plan.apply_plan(net, remat_plan.from_dict(net_plan_doc(net, x, save_mm)))
    assert list(net.state_dict()) == names
    assert type(net.layers[0]).__name__ == "CheckpointWrapper"


class _Scaled(torch.nn.Module):
    """x * 0.5 (aten::mul, a wrapped Python number), then a linear: what remat writes as aten::mul.Scalar."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x * 0.5)


def test_an_overload_in_the_plan_matches_the_op_without_it():
    # remat names a few overloads (aten::mul.Scalar where Python's `x * 0.5` runs aten::mul.Tensor): the op is
    # compared by its name without the overload, its outputs by dtype and shape, and its decision applies.
    torch.manual_seed(3)
    model, x = torch.nn.Sequential(_Scaled()), torch.randn(4, 8)
    region = remat_plan.region_dict("0", remat_plan.record_calls(model[0], x),
                                    lambda op, n, pos: "save" if op == "aten::mul" else "recompute")
    for call in region["calls"]:
        if call["op"] == "aten::mul":
            call["op"] = "aten::mul.Scalar"
    region["fingerprint"] = remat_plan.fingerprint([(c["op"], [(o["dtype"], o["shape"]) for o in c["outputs"]])
                                                    for c in region["calls"]])
    from conftest import plan_doc
    expected = torch.autograd.grad(model(x).sum(), list(model.parameters()))
    remat_plan.apply_plan(model, remat_plan.from_dict(plan_doc([region])))
    got = torch.autograd.grad(model(x).sum(), list(model.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(expected, got))
    assert remat_plan.policy.base_name("aten::mul.Scalar") == "aten::mul"
    assert remat_plan.policy.base_name("aten::_softmax") == "aten::_softmax"
