"""M05's parts inside the fragment: the router state, weights that normalise, token order
through the dispatch (M10.6), and telemetry only on request (M10.7)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate

fragment = candidate("FRAGMENT_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("fragment_router")]


@pytest.mark.clause("M10.6")
@pytest.mark.parametrize("k", [1, 2], ids=["top1", "top2"])
def test_router_logits_and_counts_of_every_layer(m10, k):
    config = m10.config(experts_per_token=k)
    state = m10.random_state(config, seed=70 + k)
    ids, positions = m10.ids(2, 5, seed=72), m10.runs([0, 6], 5)
    out = m10.loaded(config, state)(ids, positions, return_router_state=True)
    want = m10.forward(m10.plain(experts_per_token=k), state, ids, positions)
    assert len(out.router_logits) == len(out.expert_counts) == config.num_hidden_layers
    for layer in range(config.num_hidden_layers):
        assert tuple(out.router_logits[layer].shape) == (10, config.num_experts)
        assert_close(out.router_logits[layer], want.router_logits[layer], atol=1e-4, rtol=1e-4)
        counts = out.expert_counts[layer]
        assert counts.dtype == torch.int64
        assert counts.tolist() == want.expert_counts[layer].tolist()
        assert int(counts.sum()) == 10 * k


@pytest.mark.clause("M10.6")
@pytest.mark.parametrize("k", [1, 2, 3, 4], ids=["top1", "top2", "top3", "every-expert"])
def test_selected_weights_sum_to_one(m10, k):
    """Every expert of a layer holds the same weights: whatever the router chooses, a
    renormalised mixture is that one SwiGLU, so the logits are the dense M02 model's."""
    config = m10.config(experts_per_token=k)
    state = m10.random_state(config, seed=73, same_experts=True)
    ids, positions = m10.ids(2, 6, seed=74), m10.runs([2, 0], 6)
    want = m10.dense_logits(m10.plain(experts_per_token=k), state, ids, positions)
    assert_close(m10.loaded(config, state)(ids, positions).logits, want, atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.6")
def test_each_row_computes_as_alone_and_router_rows_follow_tokens(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=75))
    ids, positions = m10.ids(3, 4, seed=76), m10.runs([0, 8, 3], 4)
    batch = model(ids, positions, return_router_state=True)
    for b in range(3):
        alone = model(ids[b : b + 1], positions[b : b + 1], return_router_state=True)
        assert_close(batch.logits[b : b + 1], alone.logits, atol=1e-4, rtol=1e-4)
        for layer in range(config.num_hidden_layers):
            rows = batch.router_logits[layer][b * 4 : (b + 1) * 4]
            assert_close(rows, alone.router_logits[layer], atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.6")
def test_permuting_the_rows_permutes_logits_and_router_rows(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=77))
    ids, positions = m10.ids(3, 3, seed=78), m10.runs([1, 5, 0], 3)
    order = torch.tensor([2, 0, 1])
    out = model(ids, positions, return_router_state=True)
    permuted = model(ids[order], positions[order], return_router_state=True)
    assert_close(permuted.logits, out.logits[order], atol=1e-4, rtol=1e-4)
    token_order = (order[:, None] * 3 + torch.arange(3)).reshape(-1)
    for layer in range(config.num_hidden_layers):
        assert_close(
            permuted.router_logits[layer],
            out.router_logits[layer][token_order],
            atol=1e-4,
            rtol=1e-4,
        )
        assert permuted.expert_counts[layer].tolist() == out.expert_counts[layer].tolist()


def absent(out, name):
    return getattr(out, name, None) is None


@pytest.mark.clause("M10.7")
@pytest.mark.parametrize(
    "call",
    [{}, {"return_router_state": False}, {"use_cache": True}],
    ids=["default", "false", "with-cache"],
)
def test_router_state_is_absent_unless_requested(m10, call):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=79))
    ids, positions = m10.ids(2, 4, seed=80), m10.runs([0, 2], 4)
    out = model(ids, positions, **call)
    assert absent(out, "router_logits") and absent(out, "expert_counts")


@pytest.mark.clause("M10.7")
def test_router_state_is_absent_from_a_cached_decode_step(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=81))
    ids, positions = m10.ids(1, 4, seed=82), m10.runs([6], 4)
    first = model(ids[:, :3], positions[:, :3], use_cache=True, return_router_state=True)
    assert not absent(first, "router_logits")
    step = model(ids[:, 3:], positions[:, 3:], first.past_key_values, first.cache_lengths,
                 first.cache_start_positions, use_cache=True)  # fmt: skip
    assert absent(step, "router_logits") and absent(step, "expert_counts")


@pytest.mark.clause("M10.7")
def test_asking_for_the_router_state_leaves_the_logits_as_they_are(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=83))
    ids, positions = m10.ids(2, 5, seed=84), m10.runs([0, 4], 5)
    plain = model(ids, positions).logits
    routed = model(ids, positions, return_router_state=True)
    assert_close(routed.logits, plain, atol=0, rtol=0)
    assert len(routed.router_logits) == config.num_hidden_layers
