"""This project's own behaviour beyond the contract: chunk widths and greedy splits."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.models import cache_aware_modules

cp = candidate("CHUNKED_PREFILL_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.extension, pytest.mark.owner("chunked_metadata")]


@pytest.fixture(scope="module")
def model():
    return next(iter(MODULES.values())).make_test_model().to(test_device())


def prompt(length=5):
    ids = torch.arange(length, device=test_device())[None, :] % 16
    return ids, torch.arange(length, device=test_device())[None, :]


@pytest.mark.parametrize("chunk_size", [0, -2])
def test_chunk_size_that_is_not_positive_is_rejected(model, chunk_size):
    ids, positions = prompt()
    with pytest.raises(ValueError, match="chunk_size"):
        cp.chunked_prefill(model, ids, positions, chunk_size)


@pytest.mark.parametrize("chunk_size", [True, 2.0, "2", None])
def test_chunk_size_that_is_not_an_int_is_a_type_error(model, chunk_size):
    ids, positions = prompt()
    with pytest.raises(TypeError, match="chunk_size"):
        cp.chunked_prefill(model, ids, positions, chunk_size)


@pytest.mark.parametrize(
    ("length", "chunk_size", "sizes"),
    [(7, 3, (3, 3, 1)), (6, 3, (3, 3)), (2, 5, (2,)), (4, 1, (1, 1, 1, 1))],
)
def test_chunks_are_full_width_then_the_remainder(model, length, chunk_size, sizes):
    ids, positions = prompt(length)
    with torch.no_grad():
        assert cp.chunked_prefill(model, ids, positions, chunk_size).chunk_sizes == sizes


def test_positions_of_another_shape_are_rejected(model):
    ids, positions = prompt()
    with pytest.raises(ValueError, match="positions"):
        cp.chunked_prefill(model, ids, positions[:, :-1], 2)


def test_an_empty_prompt_is_rejected(model):
    ids, positions = prompt()
    with pytest.raises(ValueError, match="input_ids"):
        cp.chunked_prefill(model, ids[:, :0], positions[:, :0], 2)
