"""The modern variant's own architecture: GQA cache layout, rotary relativity, GQA == MHA.

Extension tests of this project's ``cache_aware_lm.modern`` (public names only).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from cache_aware_lm.modern import (
    ModernCacheAwareLM,
    ModernConfig,
    grouped_query_attention,
    make_test_model,
)
from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.extension, pytest.mark.owner("modern_architecture")]


def _tokens(length: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 16, (2, length), generator=generator).to(test_device())


def _positions(origins: list[int], length: int) -> torch.Tensor:
    device = test_device()
    return torch.tensor(origins, device=device)[:, None] + torch.arange(length, device=device)


def _manual_multi_head_attention(query, keys, values, mask):
    """Oracle: softmax(q k^T / sqrt(D)) v per head, masked entries excluded."""
    scores = query @ keys.transpose(-1, -2) / query.shape[-1] ** 0.5
    scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1) @ values


def test_cache_holds_only_the_key_value_heads():
    model = make_test_model().to(test_device())
    config = model.config
    assert config.n_kv_heads < config.n_heads
    out = model(_tokens(5), _positions([0, 3], 5), use_cache=True)
    for key, value in out.past_key_values:
        assert key.shape == value.shape == (2, config.n_kv_heads, 5, config.head_dim)


def test_shifting_every_position_leaves_logits_unchanged():
    model = make_test_model().to(test_device())
    ids = _tokens(8, seed=1)
    at_origin = model(ids, _positions([0, 0], 8)).logits
    shifted = model(ids, _positions([13, 21], 8)).logits
    assert_close(shifted, at_origin, "logits after shifting every position", atol=1e-4)


def test_shifting_a_cached_run_leaves_logits_unchanged():
    model = make_test_model().to(test_device())
    ids = _tokens(6, seed=2)
    logits = []
    for origin in (0, 17):
        positions = _positions([origin, origin], 6)
        prefix = model(ids[:, :4], positions[:, :4], use_cache=True)
        suffix = model(
            ids[:, 4:],
            positions[:, 4:],
            past_key_values=prefix.past_key_values,
            cache_lengths=prefix.cache_lengths,
            cache_start_positions=prefix.cache_start_positions,
        )
        logits.append(suffix.logits)
    assert_close(logits[1], logits[0], "cached logits after a shift", atol=1e-4)


def test_grouped_attention_with_equal_heads_is_multi_head_attention():
    generator = torch.Generator().manual_seed(3)
    query, keys, values = (torch.randn(2, 4, 5, 8, generator=generator) for _ in range(3))
    mask = torch.ones(5, 5, dtype=torch.bool).tril()[None, None].expand(2, 1, 5, 5)
    assert_close(
        grouped_query_attention(query, keys, values, mask),
        _manual_multi_head_attention(query, keys, values, mask),
        "GQA with H_kv == H",
    )


def test_grouped_attention_shares_each_kv_head_within_its_group():
    generator = torch.Generator().manual_seed(4)
    query = torch.randn(2, 6, 5, 8, generator=generator)
    keys, values = (torch.randn(2, 2, 5, 8, generator=generator) for _ in range(2))
    mask = torch.ones(5, 5, dtype=torch.bool).tril()[None, None].expand(2, 1, 5, 5)
    group_of_head = torch.arange(6) // 3  # query heads 0-2 read kv head 0, heads 3-5 kv head 1
    expected = _manual_multi_head_attention(
        query, keys[:, group_of_head], values[:, group_of_head], mask
    )
    assert_close(grouped_query_attention(query, keys, values, mask), expected, "GQA groups")


def test_grouped_model_equals_multi_head_model_with_repeated_kv_projections():
    """A GQA model equals the n_kv_heads == n_heads model whose K/V heads repeat per group."""
    grouped = make_test_model().to(test_device())
    config = grouped.config
    multi_head = ModernCacheAwareLM(dataclasses.replace(config, n_kv_heads=config.n_heads))
    multi_head = multi_head.to(test_device()).eval()
    state = grouped.state_dict()
    D, G = config.head_dim, config.group_size
    for name, tensor in list(state.items()):
        if name.endswith(("attention.k_proj.weight", "attention.v_proj.weight")):
            heads = tensor.view(config.n_kv_heads, D, config.d_model)
            state[name] = heads.repeat_interleave(G, dim=0).reshape(-1, config.d_model)
    multi_head.load_state_dict(state)
    ids, positions = _tokens(6, seed=5), _positions([2, 9], 6)
    assert_close(multi_head(ids, positions).logits, grouped(ids, positions).logits, "logits")


@pytest.mark.parametrize(
    "change",
    [
        {"n_kv_heads": 3},  # does not divide n_heads = 4
        {"n_kv_heads": 0},
        {"n_kv_heads": True},
        {"d_model": 30},  # not divisible by n_heads
        {"d_model": 12, "n_heads": 4},  # odd head_dim: rotary needs pairs
        {"rope_theta": float("inf")},
        {"rms_norm_eps": 0.0},
    ],
)
def test_modern_config_rejects_invalid_shapes(change):
    config = make_test_model().config
    with pytest.raises(ValueError):
        dataclasses.replace(config, **change)


def test_modern_config_is_frozen():
    config = make_test_model().config
    assert isinstance(config, ModernConfig)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.n_kv_heads = 4  # type: ignore[misc]
