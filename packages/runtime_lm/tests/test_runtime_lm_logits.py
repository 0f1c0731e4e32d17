"""compute_logits stays outside the hidden-state forward (M04.11)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device

rt = candidate("RUNTIME_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("runtime_logits")]


@pytest.fixture(scope="module")
def loaded(m04):
    state = m04.random_state(m04.sizes(), seed=21)
    return state, m04.loaded(m04.config(), state)


@pytest.mark.clause("M04.11")
def test_forward_returns_hidden_states_not_logits(m04, loaded):
    state, model = loaded
    requests = m04.requests([3, 2], seed=22)

    hidden = m04.run(model, requests)

    assert tuple(hidden.shape) == (5, 32)
    assert_close(hidden, m04.flat_hidden(m04.sizes(), state, requests).float())


@pytest.mark.clause("M04.11")
def test_compute_logits_applies_the_head_to_any_rows(m04, loaded):
    state, model = loaded
    generator = torch.Generator().manual_seed(23)
    anything = torch.randn(7, 32, generator=generator).to(test_device())
    m04.run(model, m04.requests([4], seed=24))  # a forward before: its rows are not reused

    logits = model.compute_logits(anything)

    assert tuple(logits.shape) == (7, 29)
    assert_close(logits, m04.logits(state, anything).float())


@pytest.mark.clause("M04.11")
def test_logits_of_a_subset_of_rows_are_those_rows_logits(m04, loaded):
    state, model = loaded
    requests = m04.requests([3, 4], seed=25)
    hidden = m04.run(model, requests)
    last_rows = torch.tensor([2, 6], device=test_device())

    every = model.compute_logits(hidden)
    sampled = model.compute_logits(hidden[last_rows])

    assert tuple(every.shape) == (7, 29) and tuple(sampled.shape) == (2, 29)
    assert_close(sampled, every[last_rows])
    oracle = m04.logits(state, m04.flat_hidden(m04.sizes(), state, requests))
    assert_close(every, oracle.float())
