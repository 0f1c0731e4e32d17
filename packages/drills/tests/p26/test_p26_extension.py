"""P26 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P26_MODULE")

pytestmark = [pytest.mark.owner("p26"), pytest.mark.extension]

IMAGE = 9  # the placeholder token id


def ids(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def encoder_rows(counts: list[int], C: int, seed: int) -> list[torch.Tensor]:
    return [seeded(n, C, seed=seed + b) + 100 * (b + 1) for b, n in enumerate(counts)]


# A count mismatch may be named after the encoder rows or after the prompt's placeholders.
MISMATCH = ("multimodal_embeddings", "input_ids")


def rejected(input_ids, embeds, rows, argument, placeholder=IMAGE, errors=BAD_VALUE):
    """Rejected before anything is written; the message may name `multimodal_embeddings` or
    the mismatched argument (`argument`: one name or several)."""
    names = (argument,) if isinstance(argument, str) else tuple(argument)
    named = {f"rows{b}": r for b, r in enumerate(rows or []) if isinstance(r, torch.Tensor)}
    with inputs_untouched(input_ids=input_ids, inputs_embeds=embeds, **named):
        assert_rejects(
            lambda: drill.merge_multimodal_embeddings(input_ids, embeds, rows, placeholder),
            errors,
            names,
        )


@pytest.mark.clause("P26.7")
def test_one_tensor_per_request_is_required():
    input_ids = ids([[IMAGE, 1], [2, 3]])
    rejected(input_ids, seeded(2, 2, 3, seed=17), encoder_rows([1], 3, 18), MISMATCH)


@pytest.mark.clause("P26.8")
def test_encoder_rows_of_another_width_are_rejected():
    input_ids = ids([[IMAGE, 1], [2, IMAGE]])
    rows = [seeded(1, 3, seed=19), seeded(1, 5, seed=20)]
    rejected(input_ids, seeded(2, 2, 3, seed=21), rows, ("multimodal_embeddings", "inputs_embeds"))


@pytest.mark.clause("P26.10")
def test_embeddings_for_another_prompt_length_are_rejected():
    input_ids = ids([[IMAGE, 1, 2], [3, 4, 5]])
    rows = encoder_rows([1, 0], 3, 23)
    rejected(input_ids, seeded(2, 4, 3, seed=24), rows, ("inputs_embeds", "input_ids"))


@pytest.mark.clause("P26.7")
def test_more_tensors_than_requests_are_rejected():
    input_ids = ids([[IMAGE, 1], [2, IMAGE]])
    rows = encoder_rows([1, 1, 1], 3, 32)
    rejected(input_ids, seeded(2, 2, 3, seed=33), rows, MISMATCH)


@pytest.mark.clause("P26.10")
def test_embeddings_for_another_batch_size_are_rejected():
    input_ids = ids([[IMAGE, 1], [2, 3]])
    rows = encoder_rows([1, 0], 3, 34)
    rejected(input_ids, seeded(3, 2, 3, seed=35), rows, ("inputs_embeds", "input_ids"))
