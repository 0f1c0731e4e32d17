"""Flat rows under the attention context (M04.3), flattened == padded (M04.4), the
embeds path (M04.5) and the one-of rule (M04.6)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.boundary import WRONG_KIND

rt = candidate("RUNTIME_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("runtime_rows")]

RAGGED = [3, 1, 5, 2]


@pytest.fixture(scope="module")
def loaded(m04):
    state = m04.random_state(m04.sizes(), seed=11)
    return state, m04.loaded(m04.config(), state)


@pytest.mark.clause("M04.3")
@pytest.mark.parametrize("lengths", [[4], RAGGED, [2, 6]], ids=["one", "four", "two"])
def test_flat_rows_equal_the_oracle_per_request(m04, loaded, lengths):
    state, model = loaded
    requests = m04.requests(lengths, seed=len(lengths))

    hidden = m04.run(model, requests)

    assert tuple(hidden.shape) == (sum(lengths), 32)
    assert_close(hidden, m04.flat_hidden(m04.sizes(), state, requests).float())


@pytest.mark.clause("M04.3")
def test_a_request_never_sees_another(m04, loaded):
    _, model = loaded
    requests = m04.requests([4, 3], seed=3)
    changed = [requests[0], (torch.flip(requests[1][0], (0,)), requests[1][1])]

    before, after = m04.run(model, requests), m04.run(model, changed)

    assert_close(before[:4], after[:4])
    assert not torch.allclose(before[4:], after[4:], atol=1e-3)


@pytest.mark.clause("M04.3")
def test_no_context_makes_the_rows_one_request(m04, loaded):
    state, model = loaded
    ids, positions = m04.requests([6], seed=4)[0]

    rt.set_attention_context(None)
    hidden = model(ids, positions)

    assert_close(hidden, m04.hidden(m04.sizes(), state, positions, ids=ids).float())


@pytest.mark.clause("M04.3")
def test_positions_come_from_the_argument_not_the_row_index(m04, loaded):
    state, model = loaded
    ids, _ = m04.requests([5], seed=6)[0]
    gapped = torch.tensor([3, 7, 8, 20, 41], device=test_device())

    rt.set_attention_context(m04.offsets([5]))
    hidden = model(ids, gapped)

    assert_close(hidden, m04.hidden(m04.sizes(), state, gapped, ids=ids).float())


def pad(requests, width: int, fill: int = 0):
    """[B, T] ids and positions, right-padded, and the lengths."""
    B = len(requests)
    ids = torch.full((B, width), fill, dtype=torch.long, device=test_device())
    positions = torch.zeros((B, width), dtype=torch.long, device=test_device())
    for b, (row_ids, row_positions) in enumerate(requests):
        ids[b, : len(row_ids)], positions[b, : len(row_ids)] = row_ids, row_positions
    return ids, positions, [len(r[0]) for r in requests]


@pytest.mark.clause("M04.4")
@pytest.mark.parametrize("lengths", [[3, 0, 5, 1], [1, 1], [6, 2, 0]], ids=str)
def test_flattened_equals_padded_after_pack_and_unpack(m04, loaded, lengths):
    state, model = loaded
    padded_ids, padded_positions, lengths = pad(m04.requests(lengths, seed=9), max(lengths))
    valid = (
        torch.arange(max(lengths), device=test_device())[None]
        < torch.tensor(lengths, device=test_device())[:, None]
    )

    rt.set_attention_context(m04.offsets(lengths))
    logits = model.compute_logits(model(padded_ids[valid], padded_positions[valid]))
    unpacked = torch.zeros(*padded_ids.shape, 29, device=test_device())
    unpacked[valid] = logits

    for b, n in enumerate(lengths):
        if n == 0:
            continue
        rt.set_attention_context(m04.offsets([n]))
        alone = model.compute_logits(model(padded_ids[b, :n], padded_positions[b, :n]))
        assert_close(unpacked[b, :n], alone)
        oracle = m04.hidden(m04.sizes(), state, padded_positions[b, :n], ids=padded_ids[b, :n])
        assert_close(unpacked[b, :n], m04.logits(state, oracle).float())


@pytest.mark.clause("M04.4")
def test_a_request_keeps_its_rows_wherever_it_sits_in_the_batch(m04, loaded):
    state, model = loaded
    requests = m04.requests([2, 4, 3], seed=12)

    forward = m04.run(model, requests)
    backward = m04.run(model, requests[::-1])

    assert_close(forward[:2], backward[7:])
    assert_close(forward[2:6], backward[3:7])
    assert_close(forward[6:], backward[:3])
    assert_close(forward, m04.flat_hidden(m04.sizes(), state, requests).float())


@pytest.mark.clause("M04.5")
def test_embed_input_ids_returns_the_embedding_rows(m04, loaded):
    state, model = loaded
    ids = torch.tensor([0, 5, 28, 5], device=test_device())

    assert_close(model.embed_input_ids(ids), state["model.embed_tokens.weight"][ids])


@pytest.mark.clause("M04.5")
def test_the_embeds_path_equals_the_ids_path(m04, loaded):
    state, model = loaded
    requests = m04.requests(RAGGED, seed=13)
    ids, positions, offsets = m04.flat(requests)

    rt.set_attention_context(offsets)
    by_ids = model(ids, positions)
    by_embeds = model(None, positions, inputs_embeds=model.embed_input_ids(ids))

    assert_close(by_embeds, by_ids)
    assert_close(by_ids, m04.flat_hidden(m04.sizes(), state, requests).float())


@pytest.mark.clause("M04.5")
def test_any_embeddings_are_the_first_layers_input(m04, loaded):
    state, model = loaded
    positions = torch.tensor([2, 5, 6, 9], device=test_device())
    generator = torch.Generator().manual_seed(14)
    embeds = torch.randn(4, 32, generator=generator).to(test_device())

    rt.set_attention_context(m04.offsets([4]))
    hidden = model(None, positions, inputs_embeds=embeds)

    assert_close(hidden, m04.hidden(m04.sizes(), state, positions, embeds=embeds).float())


@pytest.mark.clause("M04.5")
def test_the_embeds_path_gives_the_oracles_logits(m04, loaded):
    state, model = loaded
    requests = m04.requests([2, 5, 1], seed=17)
    ids, positions, offsets = m04.flat(requests)
    embeds = state["model.embed_tokens.weight"][ids]

    rt.set_attention_context(offsets)
    logits = model.compute_logits(model(None, positions, inputs_embeds=embeds))

    oracle = m04.logits(state, m04.flat_hidden(m04.sizes(), state, requests))
    assert_close(logits, oracle.float())


@pytest.mark.clause("M04.6")
@pytest.mark.parametrize("case", ["same-rows", "other-rows", "first-of-two-stages"])
def test_both_ids_and_embeds_are_rejected(m04, loaded, case):
    _, model = loaded
    if case == "first-of-two-stages":
        model = m04.model(m04.config(pipeline_size=2))
    ids, positions = m04.requests([3], seed=15)[0]
    embeds = torch.ones(3, 32, device=test_device()) if case == "other-rows" else None
    rt.set_attention_context(m04.offsets([3]))

    with pytest.raises(WRONG_KIND):
        model(
            ids, positions, inputs_embeds=model.embed_input_ids(ids) if embeds is None else embeds
        )


@pytest.mark.clause("M04.6")
def test_neither_ids_nor_embeds_is_rejected_on_the_first_stage(m04, loaded):
    _, model = loaded
    _, positions = m04.requests([3], seed=16)[0]
    rt.set_attention_context(m04.offsets([3]))

    with pytest.raises(WRONG_KIND):
        model(None, positions)
