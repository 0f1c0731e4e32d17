"""Tier 2: the functional cache (parity, ownership, validation) and the context budget."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import (
    assert_close,
    assert_no_shared_storage,
    assert_past_close,
    assert_past_unchanged,
    candidate,
    clone_past,
    test_device,
)
from gptlab_testkit.boundary import other_devices

tg = candidate("TINY_GPT_MODULE")

pytestmark = [pytest.mark.tier2, pytest.mark.contract]


def run_in_chunks(model, tokens, sizes):
    """Feed tokens chunk by chunk, threading the returned cache; (logits, final cache)."""
    past, logits, start = None, [], 0
    for size in sizes:
        output = model(tokens[:, start : start + size], past_key_values=past, use_cache=True)
        past, start = output.past_key_values, start + size
        logits.append(output.logits)
    assert start == tokens.size(1)
    return torch.cat(logits, dim=1), past


def prefix_cache(model, tokens):
    return model(tokens, use_cache=True).past_key_values


@pytest.mark.owner("tokenwise_cache")
def test_tokenwise_decode_matches_full_forward(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 10)
    full = model(tokens, use_cache=True)
    logits, past = run_in_chunks(model, tokens, [1] * 10)
    assert_close(logits, full.logits, "tokenwise logits")
    assert_past_close(past, full.past_key_values, "tokenwise final cache")


@pytest.mark.owner("tokenwise_cache")
def test_returned_cache_holds_past_then_new_in_head_layout(make_model, make_tokens):
    model = make_model()
    config = model.config
    tokens = make_tokens(2, 7)
    past = prefix_cache(model, tokens[:, :4])
    before = clone_past(past)
    present = model(tokens[:, 4:], past_key_values=past, use_cache=True).past_key_values
    assert isinstance(present, tuple)
    assert len(present) == config.n_layers
    for (key, value), (past_key, past_value) in zip(present, before, strict=True):
        for tensor, old in ((key, past_key), (value, past_value)):
            assert tensor.shape == (2, config.n_heads, 7, config.head_dim)
            assert_close(tensor[:, :, :4], old, "cached prefix inside the returned cache")


@pytest.mark.owner("rectangular_mask")
@pytest.mark.parametrize("sizes", [[4, 3, 3], [1, 6, 3], [7, 1, 2]])
def test_chunked_prefill_matches_full_forward(make_model, make_tokens, sizes):
    model = make_model()
    tokens = make_tokens(2, sum(sizes))
    full = model(tokens, use_cache=True)
    logits, past = run_in_chunks(model, tokens, sizes)
    assert_close(logits, full.logits, f"chunked logits {sizes}")
    assert_past_close(past, full.past_key_values, f"chunked final cache {sizes}")


@pytest.mark.owner("rectangular_mask")
@settings(max_examples=15, deadline=None)
@given(
    batch_size=st.integers(1, 3),
    cuts=st.sets(st.integers(1, 15), max_size=5),
    length=st.integers(2, 16),
    seed=st.integers(0, 2**16),
)
def test_random_chunk_splits_match_full_forward(
    shared_model, make_tokens, batch_size, cuts, length, seed
):
    points = [0, *sorted(cut for cut in cuts if cut < length), length]
    sizes = [end - start for start, end in itertools.pairwise(points)]
    tokens = make_tokens(batch_size, length, seed=seed)
    full = shared_model(tokens, use_cache=True)
    logits, past = run_in_chunks(shared_model, tokens, sizes)
    assert_close(logits, full.logits, f"logits for chunks {sizes}")
    assert_past_close(past, full.past_key_values, f"final cache for chunks {sizes}")


@pytest.mark.owner("rectangular_mask")
def test_attention_after_cache_matches_rectangular_oracle(make_model, decomposed_attention):
    model = make_model()
    config = model.config
    generator = torch.Generator().manual_seed(3)
    B, P, T, H, D = 2, 5, 4, config.n_heads, config.head_dim
    past_key, past_value, hidden = (
        torch.randn(shape, generator=generator).to(test_device())
        for shape in ((B, H, P, D), (B, H, P, D), (B, T, config.d_model))
    )
    attention = model.blocks[0].attention
    with torch.no_grad():
        expected, expected_key, expected_value = decomposed_attention(
            attention, H, hidden, past_key, past_value
        )
        output, (key, value) = attention(hidden, (past_key, past_value))
    assert_close(output, expected, "attention output after a cache (M[i, j] = j <= P + i)")
    assert_close(key, expected_key, "key including the past")
    assert_close(value, expected_value, "value including the past")


@pytest.mark.owner("cache_immutability")
@pytest.mark.parametrize("use_cache", [True, False])
def test_input_cache_is_not_written(make_model, make_tokens, use_cache):
    model = make_model()
    tokens = make_tokens(2, 9)
    past = prefix_cache(model, tokens[:, :5])
    before = clone_past(past)
    model(tokens[:, 5:], past_key_values=past, use_cache=use_cache)
    model(tokens[:, 5:6], past_key_values=past, use_cache=use_cache)
    assert_past_unchanged(before, past, "caller's cache")


@pytest.mark.owner("cache_immutability")
def test_returned_cache_does_not_alias_the_input_cache(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 9)
    with torch.no_grad():
        past = prefix_cache(model, tokens[:, :5])
        before = clone_past(past)
        present = model(tokens[:, 5:], past_key_values=past, use_cache=True).past_key_values
        assert_no_shared_storage(present, past, "returned cache")
    with torch.inference_mode():  # the returned tensors may be inference tensors
        for key, value in present:
            key.zero_()
            value.zero_()
    assert_past_unchanged(before, past, "caller's cache after writing the returned one")


@pytest.mark.owner("cache_immutability")
def test_use_cache_false_returns_no_cache(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 6)
    assert model(tokens).past_key_values is None
    assert model(tokens, use_cache=False).past_key_values is None
    past = prefix_cache(model, tokens[:, :4])
    assert model(tokens[:, 4:], past_key_values=past).past_key_values is None
    assert model(tokens[:, 4:], past_key_values=past, use_cache=False).past_key_values is None


def _layer(past, index, key=None, value=None):
    """A copy of the cache with one layer's key and/or value replaced."""
    layers = list(past)
    old_key, old_value = layers[index]
    layers[index] = (old_key if key is None else key, old_value if value is None else value)
    return tuple(layers)


def _on_another_device(past):
    """A real second device: a `meta` tensor is no faithful stand-in (docs/contracts.md).
    The meta case is an extension test."""
    others = other_devices(test_device())
    if not others:
        pytest.skip("no second real device on this machine")
    return tuple((k.to(others[0]), v.to(others[0])) for k, v in past)


MALFORMED_CACHES = {
    "list_not_tuple": lambda past: list(past),
    "missing_layer": lambda past: past[:-1],
    "extra_layer": lambda past: (*past, past[0]),
    "three_tensor_layer": lambda past: ((*past[0], past[0][0]), *past[1:]),
    "key_value_length_mismatch": lambda past: _layer(past, 0, value=past[0][1][:, :, :-1]),
    "key_value_head_dim_mismatch": lambda past: _layer(past, 1, value=past[1][1][..., :-1]),
    "batch": lambda past: tuple((k[:1], v[:1]) for k, v in past),
    "heads": lambda past: tuple((k[:, 1:], v[:, 1:]) for k, v in past),
    "head_dim": lambda past: tuple((k[..., 1:], v[..., 1:]) for k, v in past),
    "per_layer_length": lambda past: _layer(past, 1, past[1][0][:, :, 1:], past[1][1][:, :, 1:]),
    "three_dims": lambda past: tuple((k[:, 0], v[:, 0]) for k, v in past),
    "dtype": lambda past: tuple((k.double(), v.double()) for k, v in past),
    "device": _on_another_device,
}


@pytest.mark.rejection
@pytest.mark.owner("cache_validation")
@pytest.mark.parametrize("malform", MALFORMED_CACHES.values(), ids=MALFORMED_CACHES.keys())
def test_malformed_cache_is_rejected(make_model, make_tokens, malform):
    model = make_model()
    tokens = make_tokens(2, 6)
    past = prefix_cache(model, tokens[:, :4])
    with pytest.raises(ValueError):
        model(tokens[:, 4:], past_key_values=malform(past), use_cache=True)


@pytest.mark.rejection
@pytest.mark.owner("cache_validation")
def test_context_overflow_without_cache_is_rejected(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(1, model.config.context_length + 1)
    with pytest.raises(ValueError, match="context length"):
        model(tokens)


@pytest.mark.rejection
@pytest.mark.owner("cache_validation")
@pytest.mark.parametrize(("past_length", "new_tokens"), [(14, 3), (16, 1), (10, 7)])
def test_context_overflow_after_cache_is_rejected(make_model, make_tokens, past_length, new_tokens):
    model = make_model()
    tokens = make_tokens(2, past_length + new_tokens)
    past = prefix_cache(model, tokens[:, :past_length])
    with pytest.raises(ValueError, match="context length"):
        model(tokens[:, past_length:], past_key_values=past, use_cache=True)


@pytest.mark.owner("cache_validation")
def test_exactly_full_context_is_accepted(make_model, make_tokens):
    model = make_model()
    context = model.config.context_length
    tokens = make_tokens(2, context)
    assert model(tokens).logits.shape[1] == context
    past = prefix_cache(model, tokens[:, :-2])
    output = model(tokens[:, -2:], past_key_values=past, use_cache=True)
    assert output.past_key_values[0][0].size(2) == context


@pytest.mark.rejection
@pytest.mark.owner("eos_context")
@pytest.mark.parametrize(("prompt_length", "max_new_tokens"), [(10, 16), (8, 10), (17, 1)])
def test_generate_rejects_context_overflow(make_model, make_tokens, prompt_length, max_new_tokens):
    model = make_model()
    prompt = make_tokens(2, prompt_length)
    with pytest.raises(ValueError, match="context length"):
        model.generate(prompt, max_new_tokens)


@pytest.mark.owner("eos_context")
def test_generate_may_fill_the_context(make_model, make_tokens):
    model = make_model()
    prompt = make_tokens(2, 10)
    assert model.generate(prompt, 6).shape == (2, 16)
