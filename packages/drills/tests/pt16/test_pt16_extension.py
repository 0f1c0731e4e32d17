"""PT16 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT16_MODULE")

pytestmark = [pytest.mark.owner("pt16"), pytest.mark.extension]


def lengths(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, object]:
    k, v = seeded(2, 2, 4, 4, seed=2), seeded(2, 2, 4, 4, seed=3)
    return {"q": seeded(2, 4, 4, seed=1), "encoder_k": k, "encoder_v": v,
            "encoder_lengths": lengths([4, 2])}  # fmt: skip


@pytest.mark.clause("PT16.11")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("encoder_lengths", lambda: lengths([5, 2]), BAD_VALUE),
        ("encoder_lengths", lambda: lengths([4, -1]), BAD_VALUE),
        ("encoder_lengths", lambda: lengths([4]), BAD_VALUE),
        ("encoder_lengths", lambda: torch.tensor([4.0, 2.0], device=test_device()), WRONG_KIND),
        ("q", lambda: seeded(3, 4, 4, seed=1), BAD_VALUE),
        ("q", lambda: seeded(2, 4, 5, seed=1), BAD_VALUE),
        ("q", lambda: seeded(2, 4, seed=1), BAD_VALUE),
        ("encoder_k", lambda: [[0.0]], WRONG_KIND),
    ],
    ids=["a length past Te", "a negative length", "short lengths", "float lengths",
         "q of another batch", "q of another D", "2-D q", "a list as encoder_k"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    names = (argument, "q", "encoder_k") if argument == "q" else argument
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.cross_attention_decode(**call), errors, names)


@pytest.mark.clause("PT16.12")
def test_bf16_inputs_give_a_bf16_output_close_to_fp32():
    call = valid_call()
    want = drill.cross_attention_decode(**call)
    low = {n: t.bfloat16() if t.is_floating_point() else t for n, t in call.items()}
    got = drill.cross_attention_decode(**low)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, rtol=3e-2, atol=3e-2)
