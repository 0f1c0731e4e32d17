"""The simulated two-stage split (M04.7)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate

rt = candidate("RUNTIME_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("runtime_pipeline")]

LAYERS = 3  # an uneven split: stage 0 holds layer 0, stage 1 layers 1 and 2


@pytest.fixture(scope="module")
def stages(m04):
    sizes = m04.sizes(num_hidden_layers=LAYERS)
    state = m04.random_state(sizes, seed=31)
    built = [
        m04.loaded(m04.config(num_hidden_layers=LAYERS, pipeline_size=2, pipeline_rank=r), state)
        for r in (0, 1)
    ]
    return sizes, state, built


def row_tensors(handed) -> dict:
    tensors = getattr(handed, "tensors", None)
    assert isinstance(tensors, dict) and tensors, "a non-final stage returns IntermediateTensors"
    return tensors


@pytest.mark.clause("M04.7")
def test_the_first_stage_returns_intermediates_of_the_rows(m04, stages):
    sizes, state, (first, _) = stages
    requests = m04.requests([3, 4], seed=32)

    handed = m04.run(first, requests)

    tensors = row_tensors(handed)
    assert all(isinstance(t, torch.Tensor) and t.shape[0] == 7 for t in tensors.values())
    stream = sum(t.double() for t in tensors.values())  # one stream, or vLLM's two parts
    oracle = torch.cat(
        [m04.hidden(sizes, state, pos, ids=ids, layers=range(1)) for ids, pos in requests]
    )
    assert_close(stream, oracle)


@pytest.mark.clause("M04.7")
def test_two_stages_equal_one(m04, stages):
    sizes, state, (first, last) = stages
    requests = m04.requests([3, 0, 4, 1], seed=33)
    ids, positions, offsets = m04.flat(requests)

    rt.set_attention_context(offsets)
    hidden = last(None, positions, intermediate_tensors=first(ids, positions))

    assert tuple(hidden.shape) == (8, 32)
    assert_close(hidden, m04.flat_hidden(sizes, state, requests).float())


@pytest.mark.clause("M04.7")
def test_the_later_stage_reads_only_the_intermediates(m04, stages):
    _, _, (first, last) = stages
    requests = m04.requests([2, 5], seed=34)
    ids, positions, offsets = m04.flat(requests)
    rt.set_attention_context(offsets)
    handed = first(ids, positions)
    assert all(t.shape[0] == 7 for t in row_tensors(handed).values())

    plain = last(None, positions, intermediate_tensors=handed)
    with_other_ids = last((ids + 1) % 29, positions, intermediate_tensors=handed)

    assert_close(with_other_ids, plain)
    assert_close(last(None, positions, intermediate_tensors=handed), plain)


@pytest.mark.clause("M04.7")
def test_the_later_stage_holds_no_embedding_and_the_first_no_head(m04, stages):
    _, _, (first, last) = stages

    assert not [name for name in last.state_dict() if "embed_tokens" in name]
    assert not [name for name in first.state_dict() if name.startswith(("lm_head", "model.norm"))]
    assert "model.embed_tokens.weight" in first.state_dict()


@pytest.mark.clause("M04.7")
def test_the_stages_split_the_logits_path(m04, stages):
    sizes, state, (first, last) = stages
    requests = m04.requests([4, 2], seed=35)
    ids, positions, offsets = m04.flat(requests)

    rt.set_attention_context(offsets)
    logits = last.compute_logits(last(None, positions, intermediate_tensors=first(ids, positions)))

    oracle = m04.logits(state, m04.flat_hidden(sizes, state, requests))
    assert_close(logits, oracle.float())
