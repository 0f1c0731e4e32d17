"""PT29 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT29_MODULE")

pytestmark = [pytest.mark.owner("pt29"), pytest.mark.extension]


def ints(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, object]:
    return {"logits": seeded(2, 5, seed=1), "allowed_ids": ints([1, 4, 0]),
            "offsets": ints([0, 2, 3])}  # fmt: skip


@pytest.mark.clause("PT29.9")
def test_the_sentinel_is_minus_infinity():
    got = drill.apply_allowed_tokens(**valid_call())
    assert got[0, 0].item() == float("-inf") and got[1, 4].item() == float("-inf")


@pytest.mark.clause("PT29.10")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("logits", lambda: seeded(5, seed=1), BAD_VALUE),
        ("logits", lambda: torch.zeros(2, 5, dtype=torch.long, device=test_device()), WRONG_KIND),
        ("allowed_ids", lambda: torch.tensor([1.0, 4.0, 0.0], device=test_device()), WRONG_KIND),
        ("offsets", lambda: ints([[0, 2, 3]]), BAD_VALUE),
        ("allowed_ids", lambda: [1, 4, 0], WRONG_KIND),
        ("offsets", lambda: torch.tensor([0, 2, 3], device="meta"), BAD_VALUE),
    ],
    ids=["1-D logits", "integer logits", "float ids", "2-D offsets", "a list",
         "offsets on another device"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor) and not t.is_meta}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.apply_allowed_tokens(**call), errors, argument)


@pytest.mark.clause("PT29.11")
def test_the_logits_are_only_read_and_the_result_is_new_memory():
    call = valid_call()
    with inputs_untouched(**call):  # type: ignore[arg-type]
        got = drill.apply_allowed_tokens(**call)
        with torch.inference_mode():
            got.fill_(5.0)
