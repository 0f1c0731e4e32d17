"""M04 extension: this package's rules beyond the kit's (tested apart, never scored):
argument checks (M04.14), parameters kept through loads and the tied head (M04.15)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.boundary import WRONG_KIND, assert_rejects
from gptlab_testkit.objects import assert_same_object

rt = candidate("RUNTIME_LM_MODULE")

pytestmark = [pytest.mark.extension, pytest.mark.owner("runtime_interface")]


@pytest.mark.clause("M04.14")
@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"pipeline_size": 0}, "pipeline_size"),
        ({"pipeline_size": True}, "pipeline_size"),
        ({"pipeline_size": 3}, "pipeline_size"),
        ({"pipeline_size": 2, "pipeline_rank": 2}, "pipeline_rank"),
        ({"pipeline_rank": -1}, "pipeline_rank"),
        ({"pipeline_rank": 0.0}, "pipeline_rank"),
    ],
    ids=[
        "zero-stages",
        "bool",
        "more-stages-than-layers",
        "rank-past-the-end",
        "negative",
        "float",
    ],
)
def test_a_bad_pipeline_stage_is_rejected(m04, overrides, named):
    assert_rejects(lambda: m04.config(**overrides), WRONG_KIND, named)


@pytest.mark.clause("M04.14")
@pytest.mark.parametrize(
    "bad",
    [
        torch.tensor([0, 2.0]),
        torch.tensor([[0, 2]]),
        torch.tensor([0]),
        torch.tensor([1, 3]),
        torch.tensor([0, 3, 2]),
        [0, 3],
    ],
    ids=["float", "2-d", "no-request", "not-from-zero", "decreasing", "list"],
)
def test_a_bad_context_is_rejected(bad):
    assert_rejects(lambda: rt.set_attention_context(bad), WRONG_KIND, "query_start_loc")


@pytest.mark.clause("M04.14")
def test_a_context_that_does_not_cover_the_rows_is_rejected(m04):
    model = m04.model(m04.config())
    ids, positions = m04.requests([4], seed=71)[0]
    rt.set_attention_context(m04.offsets([3]))

    assert_rejects(lambda: model(ids, positions), WRONG_KIND, "query_start_loc")


@pytest.mark.clause("M04.14")
@pytest.mark.parametrize(
    ("ids", "positions", "named"),
    [
        ([1, 2, 3], [0, 1, 2], "input_ids"),
        ([[1, 2, 3]], [0, 1, 2], "input_ids"),
        ([1, 2, 29], [0, 1, 2], "input_ids"),
        ([1, 2, 3], [0, 1], "positions"),
        ([1, 2, 3], [0, 1, 64], "positions"),
        ([1, 2, 3], [0.0, 1.0, 2.0], "positions"),
    ],
    ids=[
        "ids-list",
        "ids-2d",
        "ids-past-vocab",
        "positions-short",
        "positions-past-context",
        "positions-float",
    ],
)
def test_bad_rows_are_rejected(m04, ids, positions, named):
    model = m04.model(m04.config())
    rt.set_attention_context(None)
    as_ids = (
        ids
        if named == "input_ids" and ids == [1, 2, 3]
        else torch.tensor(ids, device=test_device())
    )
    as_positions = torch.tensor(positions, device=test_device())

    assert_rejects(lambda: model(as_ids, as_positions), WRONG_KIND, named)


@pytest.mark.clause("M04.14")
def test_a_later_stage_without_intermediates_is_rejected(m04):
    model = m04.model(m04.config(pipeline_size=2, pipeline_rank=1))
    ids, positions = m04.requests([3], seed=72)[0]
    rt.set_attention_context(None)

    assert_rejects(lambda: model(ids, positions), WRONG_KIND, "intermediate_tensors")


@pytest.mark.clause("M04.15")
def test_load_weights_keeps_the_parameter_objects(m04):
    model = m04.model(m04.config())
    before = dict(model.named_parameters())

    model.load_weights(m04.pairs(m04.random_state(m04.sizes(), seed=73)))

    for name, parameter in model.named_parameters():
        assert_same_object(parameter, before[name], name)


@pytest.mark.clause("M04.15")
@pytest.mark.parametrize("with_head", [True, False], ids=["head-given", "head-absent"])
def test_a_tied_head_stays_the_embedding(m04, with_head):
    sizes = m04.sizes(tie_word_embeddings=True)
    state = m04.random_state(sizes, seed=74)
    if not with_head:
        del state["lm_head.weight"]
    model = m04.loaded(m04.config(tie_word_embeddings=True), state)
    requests = m04.requests([3, 2], seed=75)

    assert_same_object(model.lm_head.weight, model.model.embed_tokens.weight, "head and embedding")
    logits = model.compute_logits(m04.run(model, requests))
    oracle = m04.logits(
        {"lm_head.weight": state["model.embed_tokens.weight"]},
        m04.flat_hidden(sizes, state, requests),
    )
    assert_close(logits, oracle.float())


@pytest.mark.clause("M04.15")
def test_a_tied_last_stage_holds_the_embedding_as_its_head(m04):
    config = m04.config(
        num_hidden_layers=3, tie_word_embeddings=True, pipeline_size=2, pipeline_rank=1
    )
    model = m04.model(config)

    assert "model.embed_tokens.weight" in model.state_dict()
    assert_same_object(model.lm_head.weight, model.model.embed_tokens.weight, "head and embedding")
