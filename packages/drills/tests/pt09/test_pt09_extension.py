"""PT09 extension: the Parameters kept, copied without autograd, and odd sources refused."""

from __future__ import annotations

import pytest

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.objects import object_id
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_PT09_MODULE")

pytestmark = [pytest.mark.owner("pt09"), pytest.mark.extension]

IN = 6


def checkpoint() -> dict:
    rows = {"q_proj": 8, "k_proj": 2, "v_proj": 2}
    state = {f"{p}.weight": seeded(r, IN, seed=i) for i, (p, r) in enumerate(rows.items())}
    state.update({f"{p}.bias": seeded(r, seed=i + 5) for i, (p, r) in enumerate(rows.items())})
    return state


@pytest.mark.clause("PT09.11")
def test_the_load_keeps_the_parameter_objects_and_adds_no_history():
    module = drill.FusedQKV(IN, 8, 2, True).to(test_device())
    weight, bias = object_id(module.qkv.weight), object_id(module.qkv.bias)

    module.load_qkv_(checkpoint())

    assert object_id(module.qkv.weight) == weight and object_id(module.qkv.bias) == bias
    assert module.qkv.weight.requires_grad and module.qkv.weight.grad_fn is None


@pytest.mark.clause("PT09.12")
@pytest.mark.parametrize(
    "source",
    [lambda: "q_proj.weight", lambda: [("q_proj.weight",)], lambda: {"q_proj.weight": [1.0]}],
    ids=["a string", "a one-element pair", "a list value"],
)
def test_a_source_that_is_no_checkpoint_is_refused(source):
    module = drill.FusedQKV(IN, 8, 2, False).to(test_device())
    assert_rejects(lambda: module.load_qkv_(source()), WRONG_KIND, ("source", "q_proj.weight"))
