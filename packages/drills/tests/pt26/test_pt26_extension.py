"""PT26 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT26_MODULE")

pytestmark = [pytest.mark.owner("pt26"), pytest.mark.extension]


def valid_call() -> dict[str, object]:
    return {
        "x": seeded(3, 4, seed=1),
        "adapter_ids": torch.tensor([1, -1, 0], device=test_device()),
        "weight": seeded(5, 4, seed=2),
        "bias": seeded(5, seed=3),
        "a_bank": seeded(2, 2, 4, seed=4),
        "b_bank": seeded(2, 5, 2, seed=5),
        "scales": seeded(2, seed=6),
    }


@pytest.mark.clause("PT26.9")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("weight", lambda: seeded(5, 3, seed=7), BAD_VALUE),
        ("bias", lambda: seeded(4, seed=7), BAD_VALUE),
        ("a_bank", lambda: seeded(2, 2, 3, seed=7), BAD_VALUE),
        ("b_bank", lambda: seeded(3, 5, 2, seed=7), BAD_VALUE),
        ("scales", lambda: seeded(3, seed=7), BAD_VALUE),
        ("adapter_ids", lambda: torch.tensor([1, -1], device=test_device()), BAD_VALUE),
        ("adapter_ids", lambda: torch.tensor([1.0, -1.0, 0.0], device=test_device()), WRONG_KIND),
        ("weight", lambda: seeded(5, 4, seed=7, dtype=torch.float64), WRONG_KIND),
        ("x", lambda: [[0.0] * 4] * 3, WRONG_KIND),
    ],
    ids=["weight I", "bias O", "a_bank I", "b_bank A", "scales A", "short ids", "float ids",
         "f64 weight beside f32 x", "a list as x"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.multi_lora_linear(**call), errors, argument)


@pytest.mark.clause("PT26.10")
def test_the_inputs_are_only_read_and_the_result_is_new_memory():
    call = valid_call()
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        got = drill.multi_lora_linear(**call)
        with torch.inference_mode():
            got.fill_(3.0)
