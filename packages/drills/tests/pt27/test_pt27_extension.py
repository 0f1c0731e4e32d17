"""PT27 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT27_MODULE")

pytestmark = [pytest.mark.owner("pt27"), pytest.mark.extension]


def ints(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, object]:
    return {"token_buffer": ints([[1, 2, 3], [4, 5, 6]]), "starts": ints([0, 2]),
            "counts": ints([2, 1])}  # fmt: skip


@pytest.mark.clause("PT27.9")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("starts", lambda: ints([0]), BAD_VALUE),
        ("counts", lambda: ints([[2], [1]]), BAD_VALUE),
        ("token_buffer", lambda: ints([1, 2, 3]), BAD_VALUE),
        ("counts", lambda: torch.tensor([2.0, 1.0], device=test_device()), WRONG_KIND),
        ("starts", lambda: [0, 2], WRONG_KIND),
        ("counts", lambda: torch.tensor([2, 1], device="meta"), BAD_VALUE),
    ],
    ids=["short starts", "2-D counts", "1-D buffer", "float counts", "a list",
         "counts on another device"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor) and not t.is_meta}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.materialize_chunks(**call), errors, argument)


@pytest.mark.clause("PT27.10")
def test_the_inputs_are_only_read_and_the_results_are_new_memory():
    call = valid_call()
    with inputs_untouched(**call):  # type: ignore[arg-type]
        results = drill.materialize_chunks(**call)
        with torch.inference_mode():
            for tensor in results:
                tensor.fill_(-7)
    assert drill.materialize_chunks(**call)[0].tolist() == [1, 2, 6]
