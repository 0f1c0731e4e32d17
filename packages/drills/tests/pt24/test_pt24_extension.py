"""PT24 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT24_MODULE")

pytestmark = [pytest.mark.owner("pt24"), pytest.mark.extension]


def floats(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, device=test_device())


def valid_call() -> dict[str, object]:
    return {
        "draft_logprobs": floats([[-1.0, -2.0], [-0.5, -1.0]]),
        "target_logprobs": floats([[-1.5, -1.0], [-0.5, -3.0]]),
        "uniforms": floats([[0.2, 0.7], [0.9, 0.5]]),
    }


@pytest.mark.clause("PT24.10")
@pytest.mark.parametrize("bad", [0.5, float("nan")], ids=["p_t > 1", "NaN"])
def test_an_impossible_target_probability_is_rejected(bad):
    call = valid_call()
    target = call["target_logprobs"].clone()  # type: ignore[union-attr]
    target[1, 1] = bad
    call["target_logprobs"] = target
    with inputs_untouched(**call):  # type: ignore[arg-type]
        assert_rejects(lambda: drill.accepted_prefix_lengths(**call), BAD_VALUE, "target_logprobs")


@pytest.mark.clause("PT24.11")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("uniforms", lambda: floats([[0.2, 0.7]]), BAD_VALUE),
        ("target_logprobs", lambda: floats([[-1.0], [-1.0]]), BAD_VALUE),
        ("draft_logprobs", lambda: floats([-1.0, -2.0]), BAD_VALUE),
        ("uniforms", lambda: torch.zeros(2, 2, dtype=torch.long, device=test_device()), WRONG_KIND),
        ("draft_logprobs", lambda: [[-1.0, -2.0], [-0.5, -1.0]], WRONG_KIND),
        ("uniforms", lambda: torch.zeros(2, 2, device="meta"), BAD_VALUE),
    ],
    ids=["short uniforms", "narrow target", "1-D draft", "integer uniforms", "a list",
         "uniforms on another device"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor) and not t.is_meta}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.accepted_prefix_lengths(**call), errors, argument)


@pytest.mark.clause("PT24.12")
def test_the_inputs_are_only_read_and_a_repeated_call_gives_the_same_lengths():
    call = valid_call()
    with inputs_untouched(**call):  # type: ignore[arg-type]
        first = drill.accepted_prefix_lengths(**call).tolist()
        second = drill.accepted_prefix_lengths(**call).tolist()
    assert first == second == [2, 1], f"{first}, then {second}"
