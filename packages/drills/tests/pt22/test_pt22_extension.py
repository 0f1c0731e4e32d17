"""PT22 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_close,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT22_MODULE")

pytestmark = [pytest.mark.owner("pt22"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, object]:
    return {
        "logits": seeded(5, 4, seed=1),
        "token_ids": long([1, 2, 3, 0, 1]),
        "offsets": long([0, 2, 5]),
        "top_k": 2,
    }


@pytest.mark.clause("PT22.13")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("token_ids", lambda: long([1, 2, 4, 0, 1]), BAD_VALUE),
        ("token_ids", lambda: long([-1, 2, 3, 0, 1]), BAD_VALUE),
        ("token_ids", lambda: long([1, 2, 3, 0]), BAD_VALUE),
        ("token_ids", lambda: long([1, 2, 3, 0, 1]).float(), WRONG_KIND),
        ("offsets", lambda: long([0, 2, 5]).float(), WRONG_KIND),
        ("offsets", lambda: long([[0, 2, 5]]), BAD_VALUE),
        ("top_k", lambda: True, WRONG_KIND),
        ("top_k", lambda: 2.0, WRONG_KIND),
        ("logits", lambda: seeded(20, seed=2), BAD_VALUE),
        ("logits", lambda: long([[1, 2, 3, 4]] * 5), WRONG_KIND),
    ],
    ids=["id V", "id -1 on a first token", "short ids", "float ids", "float offsets",
         "2-D offsets", "bool top_k", "float top_k", "1-D logits", "int logits"],
)  # fmt: skip
def test_inputs_the_contract_leaves_undefined_are_rejected(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.packed_prompt_logprobs(**call), errors, argument)


@pytest.mark.clause("PT22.14")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_low_precision_logits_are_scored_in_fp32(dtype):
    logits, ids, offsets = seeded(5, 4, seed=3, dtype=dtype), long([1, 2, 3, 0, 1]), long([0, 5])
    want = drill.packed_prompt_logprobs(logits.float(), ids, offsets, 2)

    got = drill.packed_prompt_logprobs(logits, ids, offsets, 2)

    assert got[0].dtype == torch.float32 and got[2].dtype == torch.float32, f"{got[0].dtype}"
    assert_close(got[0][1:], want[0][1:])
    assert_close(got[2][1:], want[2][1:])
