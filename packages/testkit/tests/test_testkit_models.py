"""The tiny decoder pieces the model builds' suites share (`gptlab_testkit.models`).

Each oracle piece is checked against torch's own operator or an identity it must keep,
and the seeded builders against what a suite relies on: the same seed, the same weights,
in the checkpoint's order, and the test's random state left alone.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch.nn import functional

from gptlab_testkit import models

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

CONFIG = SimpleNamespace(**models.TINY_DECODER, tie_word_embeddings=False)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_rms_norm_is_torchs_rms_norm():
    x, weight = randn(2, 3, 8), randn(8, seed=1)

    expected = functional.rms_norm(x, (8,), weight, eps=0.05)
    torch.testing.assert_close(models.rms_norm(x, weight, 0.05), expected)


def test_rope_turns_pairs_by_position_and_keeps_only_differences():
    q, k = randn(1, 2, 5, 8), randn(1, 2, 5, 8, seed=1)
    at = torch.arange(5)[None]

    torch.testing.assert_close(models.rope(q, at * 0, 100.0), q)  # position 0: no turn
    scores = models.rope(q, at, 100.0) @ models.rope(k, at, 100.0).transpose(-1, -2)
    shifted = models.rope(q, at + 7, 100.0) @ models.rope(k, at + 7, 100.0).transpose(-1, -2)
    torch.testing.assert_close(scores, shifted)
    # one request [H, T, D] at positions [T] turns as its batch of one
    torch.testing.assert_close(models.rope(q[0], at[0], 100.0), models.rope(q, at, 100.0)[0])


def test_attention_is_causal_sdpa_over_repeated_kv_heads():
    q, k, v = randn(2, 4, 6, 8), randn(2, 2, 6, 8, seed=1), randn(2, 2, 6, 8, seed=2)

    expected = functional.scaled_dot_product_attention(
        q, k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1), is_causal=True
    )
    torch.testing.assert_close(models.attention(q, k, v), expected)


def test_mixture_of_every_expert_is_the_softmax_weighted_sum():
    shapes = models.mixture_shapes(8, 12, 3, "mlp.")
    state = {name: randn(*shape, seed=i) for i, (name, shape) in enumerate(shapes.items())}
    x = randn(2, 4, 8, seed=9)

    out, logits, counts = models.mixture(x, state, 3, "mlp.")
    weights = (x @ state["mlp.gate.weight"].T).softmax(dim=-1)
    experts = [models.swiglu(x, state, f"mlp.experts.{e}.") for e in range(3)]
    expected = sum(weights[..., e : e + 1] * experts[e] for e in range(3))
    torch.testing.assert_close(out, expected)
    assert logits.shape == (8, 3) and counts.tolist() == [8, 8, 8]


def test_top_k_takes_the_lower_index_among_equals():
    assert models.top_k(torch.tensor([0.2, 0.3, 0.3, 0.2]), 3) == [1, 2, 0]


def test_checkpoint_shapes_keep_llamas_order_and_the_feed_forward_hook():
    dense = models.checkpoint_shapes(CONFIG)
    mixed = models.checkpoint_shapes(CONFIG, lambda i, p: models.mixture_shapes(32, 40, 2, p))

    assert len(dense) == 1 + 2 * 9 + 2
    assert list(dense)[:4] == [
        "model.embed_tokens.weight",
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.k_proj.weight",
    ]
    assert dense["model.layers.1.self_attn.k_proj.weight"] == (16, 32)
    assert mixed["model.layers.1.mlp.gate.weight"] == (2, 32)
    assert "model.layers.1.mlp.experts.1.down_proj.weight" in mixed


def test_seeded_checkpoint_is_the_seeds_and_ties_on_request():
    shapes = models.checkpoint_shapes(CONFIG)
    first, again = (models.seeded_checkpoint(shapes, 3, tie=True) for _ in range(2))
    other = models.seeded_checkpoint(shapes, 4, tie=False)

    assert all(torch.equal(first[name], again[name]) for name in shapes)
    assert first["lm_head.weight"] is first["model.embed_tokens.weight"]
    assert not torch.equal(other["lm_head.weight"], other["model.embed_tokens.weight"])
    gain = first["model.norm.weight"]
    assert gain.min() >= 0.5 and gain.max() <= 1.5


def test_seeded_build_repeats_and_leaves_the_tests_random_state():
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)

    built = models.seeded_build(lambda: torch.nn.Linear(4, 4), 5)
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(models.seeded_build(lambda: torch.nn.Linear(4, 4), 5).weight, built.weight)


def test_a_decoder_layer_without_attention_or_feed_forward_passes_x_through():
    shapes = models.checkpoint_shapes(CONFIG)
    state = {name: randn(*shape, seed=i) for i, (name, shape) in enumerate(shapes.items())}
    state["model.layers.0.self_attn.o_proj.weight"].zero_()
    x = randn(2, 5, 32, seed=7)
    positions = models.gapped_positions(2, 5, seed=1)

    out = models.decoder_layer(CONFIG, state, 0, x, positions, lambda normed, _: normed * 0)
    torch.testing.assert_close(out, x)
    assert not torch.allclose(models.decoder_layer(CONFIG, state, 0, x, positions), x)
