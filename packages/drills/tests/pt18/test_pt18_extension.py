"""PT18 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT18_MODULE")

pytestmark = [pytest.mark.owner("pt18"), pytest.mark.extension]


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, device=test_device())


def build():
    torch.manual_seed(0)
    model = drill.RotaryLM(vocab_size=13, d_model=8, n_heads=2, n_layers=2, max_positions=64)
    return model.to(test_device()).eval()


@pytest.mark.clause("PT18.12")
@pytest.mark.parametrize(
    "mask",
    [[[0, 2, 1], [1, 1, 1]], [[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]], [0, 1, 1], [[0, 1], [1, 1]]],
    ids=["a 2 in the mask", "float mask", "1-D mask", "mask narrower than the ids"],
)
def test_a_mask_the_contract_leaves_undefined_is_rejected(mask):
    model, ids, bad = build(), tensor([[0, 4, 7], [1, 9, 3]]), tensor(mask)
    with inputs_untouched(input_ids=ids, attention_mask=bad), torch.no_grad():
        assert_rejects(lambda: model(ids, bad), BAD_VALUE, "attention_mask")


@pytest.mark.clause("PT18.13")
def test_right_padding_gives_the_same_real_token_logits():
    model = build()
    left_ids, left_mask = tensor([[0, 0, 4, 7], [1, 9, 3, 5]]), tensor([[0, 0, 1, 1], [1] * 4])
    right_ids, right_mask = tensor([[4, 7, 0, 0], [1, 9, 3, 5]]), tensor([[1, 1, 0, 0], [1] * 4])
    with torch.no_grad():
        left, right = model(left_ids, left_mask), model(right_ids, right_mask)
    assert_close(right[0, :2], left[0, 2:])
    assert_close(right[1], left[1])
