# no PyTorch counterpart: remat_plan.load and the fingerprint, on good and refused plan files.
import json

import pytest

import remat_plan
from remat_plan.fingerprint import fnv1a64

from conftest import plan_doc, region_doc

CALLS = [("aten::addmm", (("f32", (4, 16)),)), ("aten::gelu", (("f32", (4, 16)),)),
         ("aten::sum", (("f32", ()),)), ("aten::addmm", (("f32", (4, 8)),))]


def good_doc():
    return plan_doc([region_doc("layers.0", CALLS, lambda op, n: "save" if op == "aten::addmm" else "recompute")])


def test_fnv1a64_reference_values():
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8


def test_fingerprint_hashes_the_canonical_text():
    text = "aten::addmm(f32[4x16]);aten::gelu(f32[4x16]);aten::sum(f32[]);aten::addmm(f32[4x8]);"
    assert remat_plan.fingerprint(CALLS) == f"fnv1a64:{fnv1a64(text.encode()):016x}"
    assert remat_plan.fingerprint([("aten::split", [("f32", (2, 3)), ("bf16", (2, 3))])]) == \
        f"fnv1a64:{fnv1a64(b'aten::split(f32[2x3],bf16[2x3]);'):016x}"


def test_fingerprint_of_docs_plan_format_example():
    # docs/plan_format.md's worked example, which remat's C++ checks too
    assert remat_plan.fingerprint([("aten::mm", [("f32", (1024, 768))]), ("aten::gelu", [("f32", (8, 128, 3072))])]) \
        == "fnv1a64:a05c52b51ffe2e27"


def test_load_reads_regions_calls_and_decisions(write_plan):
    doc = good_doc()
    doc["extra_top"] = {"ignored": True}
    doc["regions"][0]["calls"][1]["extra"] = 7
    plan = remat_plan.load(write_plan(doc))
    assert (plan.budget_bytes, plan.counter, plan.device, plan.dtype) == (1 << 20, "allocated", "cpu", "f32")
    region = plan.regions["layers.0"]
    assert [(c.op, c.index, c.decision) for c in region.calls] == [
        ("aten::addmm", 0, "save"), ("aten::gelu", 0, "recompute"), ("aten::sum", 0, "recompute"),
        ("aten::addmm", 1, "save")]
    assert region.calls[2].outputs == (("f32", ()),)
    assert region.fingerprint == remat_plan.fingerprint(CALLS)


def refused(write_plan, doc, *fragments):
    path = write_plan(doc)
    with pytest.raises(remat_plan.PlanFormatError) as e:
        remat_plan.load(path)
    message = str(e.value)
    assert path in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_refuses_another_format(write_plan):
    doc = good_doc()
    doc["format"] = "torch-plan"
    refused(write_plan, doc, "format", "expected 'remat-plan'", '"torch-plan"', "not a remat plan")


def test_refuses_another_version(write_plan):
    doc = good_doc()
    doc["version"] = 2
    refused(write_plan, doc, "version 2", "reads version 1")


def test_refuses_malformed_json(write_plan):
    refused(write_plan, '{"format": "remat-plan",\n "version": }', "malformed JSON at line 2 column")


def _set(path, value):
    """A mutation of good_doc(): the field at `path` (keys and indices) set to `value`, or deleted (DELETE)."""
    def mutate(doc):
        *parents, last = path
        for key in parents:
            doc = doc[key]
        if value is DELETE:
            del doc[last]
        else:
            doc[last] = value
    return mutate


DELETE = object()
CALL = ("regions", 0, "calls")

# (mutation, fragments of the message): a missing or mistyped field, an unknown value or decision, a decision
# that names no op, an index out of sequence
REFUSED = [
    (_set(("budget_bytes",), DELETE), ["budget_bytes: missing"]),
    (_set(CALL + (2, "outputs"), DELETE), ["regions[0].calls[2].outputs: missing"]),
    (_set(("version",), "1"), ['version: expected an integer, got "1"']),
    (_set(CALL + (0, "index"), True), ["regions[0].calls[0].index: expected an integer, got true"]),
    (_set(CALL + (0, "outputs", 0, "shape"), [4, -1]),
     ["regions[0].calls[0].outputs[0].shape: expected sizes >= 0, got [4, -1]"]),
    (_set(CALL + (3, "decision"), "keep"),
     ["regions[0].calls[3].decision: unknown value 'keep'", "save, recompute, offload"]),
    (_set(("counter",), "peak"), ["counter: unknown value 'peak'"]),
    (_set(CALL + (1, "outputs", 0, "dtype"), "f8"), ["regions[0].calls[1].outputs[0].dtype: unknown value 'f8'"]),
    (_set(CALL + (1, "op"), ""), ["regions[0].calls[1].op: '' names no op"]),
    (_set(CALL + (1, "op"), DELETE), ["regions[0].calls[1].op: missing"]),
    (_set(CALL + (3, "index"), 0),
     ["regions[0].calls[3].index: aten::addmm #0, but this is the region's call #1 of aten::addmm"]),
]


@pytest.mark.parametrize("mutate, fragments", REFUSED)
def test_refuses_a_bad_field(write_plan, mutate, fragments):
    doc = good_doc()
    mutate(doc)
    refused(write_plan, doc, *fragments)


def test_refuses_a_fingerprint_that_does_not_match(write_plan):
    doc = good_doc()
    doc["regions"][0]["calls"][2]["outputs"][0]["shape"] = [1]
    refused(write_plan, doc, "regions[0].fingerprint", "does not match the region's calls",
            remat_plan.fingerprint([CALLS[0], CALLS[1], ("aten::sum", (("f32", (1,)),)), CALLS[3]]))
    doc = good_doc()
    doc["regions"][0]["fingerprint"] = "crc32:1234"
    refused(write_plan, doc, "'crc32:1234' not 'fnv1a64:' and 16 lowercase hex digits")


def test_refuses_a_region_twice(write_plan):
    doc = good_doc()
    doc["regions"].append(json.loads(json.dumps(doc["regions"][0])))
    refused(write_plan, doc, "regions[1].name: region 'layers.0' appears twice")


def test_refuses_a_top_level_that_is_not_an_object(write_plan):
    refused(write_plan, "[1, 2]", "top level: expected an object, got list")


def test_unknown_region_is_a_mismatch(write_plan):
    plan = remat_plan.load(write_plan(good_doc()))
    with pytest.raises(remat_plan.PlanMismatchError, match=r"region 'layers\.9' is not in the plan .*its regions: layers\.0"):
        remat_plan.context_fn(plan, "layers.9")


def test_record_calls_names_ops_as_the_plan_does():
    import torch
    lin = torch.nn.Linear(4, 3)
    calls = remat_plan.record_calls(lambda x: (lin(x) * 2.0).sum(), torch.randn(5, 4))
    assert calls == [("aten::t", (("f32", (4, 3)),)), ("aten::addmm", (("f32", (5, 3)),)),
                     ("aten::mul", (("f32", (5, 3)),)), ("aten::sum", (("f32", ()),))]
    region = remat_plan.region_dict("r", calls, lambda op, n, position: "save" if position == 1 else "recompute")
    assert [c["decision"] for c in region["calls"]] == ["recompute", "save", "recompute", "recompute"]
    assert region["fingerprint"] == remat_plan.fingerprint(calls)
