"""M03's cache inside the fragment: prefill == token-step decode == chunks (M10.3), rows with
their own cache lengths and origins (M10.4), the caller's cache never written (M10.5)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, assert_past_unchanged, candidate, clone_past

fragment = candidate("FRAGMENT_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("fragment_cache")]


def decode_chain(model, ids, positions, split):
    """Prefill ``split`` tokens, then one token per call; the logits of every call, joined."""
    out = model(ids[:, :split], positions[:, :split], use_cache=True)
    logits = [out.logits]
    for t in range(split, ids.shape[1]):
        out = model(
            ids[:, t : t + 1],
            positions[:, t : t + 1],
            out.past_key_values,
            out.cache_lengths,
            out.cache_start_positions,
            use_cache=True,
        )
        logits.append(out.logits)
    return torch.cat(logits, dim=1), out


@pytest.mark.clause("M10.3")
@pytest.mark.parametrize("split", [1, 4], ids=["from-one-token", "from-four"])
def test_token_step_decode_equals_the_full_prefill(m10, split):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=50))
    ids, positions = m10.ids(2, 8, seed=51), m10.runs([0, 13], 8)
    full = model(ids, positions).logits
    stepped, _ = decode_chain(model, ids, positions, split)
    assert_close(stepped, full, atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.3")
def test_decode_logits_equal_the_oracle_at_a_nonzero_origin(m10):
    config = m10.config(num_key_value_heads=1)
    state = m10.random_state(config, seed=52)
    ids, positions = m10.ids(1, 7, seed=53), m10.runs([21], 7)
    stepped, _ = decode_chain(m10.loaded(config, state), ids, positions, 3)
    want = m10.forward(m10.plain(num_key_value_heads=1), state, ids, positions).logits
    assert_close(stepped, want, atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.3")
def test_chunked_prefill_equals_the_full_prefill_with_its_cache(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=54))
    ids, positions = m10.ids(2, 9, seed=55), m10.runs([5, 0], 9)
    full = model(ids, positions, use_cache=True)
    first = model(ids[:, :4], positions[:, :4], use_cache=True)
    second = model(
        ids[:, 4:],
        positions[:, 4:],
        first.past_key_values,
        first.cache_lengths,
        first.cache_start_positions,
        use_cache=True,
    )
    assert_close(torch.cat((first.logits, second.logits), dim=1), full.logits, atol=1e-4, rtol=1e-4)
    assert second.cache_lengths.tolist() == full.cache_lengths.tolist() == [9, 9]
    for (key, value), (full_key, full_value) in zip(
        second.past_key_values, full.past_key_values, strict=True
    ):
        assert_close(key[:, :, :9], full_key[:, :, :9], atol=1e-4, rtol=1e-4)
        assert_close(value[:, :, :9], full_value[:, :, :9], atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.3")
def test_the_returned_cache_and_its_metadata(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=56))
    ids, positions = m10.ids(2, 5, seed=57), m10.runs([3, 10], 5)
    first = model(ids[:, :3], positions[:, :3], use_cache=True)
    assert first.cache_lengths.tolist() == [3, 3]
    assert first.cache_start_positions.tolist() == [3, 10]
    assert len(first.past_key_values) == config.num_hidden_layers
    for key, value in first.past_key_values:
        assert key.shape[:2] == value.shape[:2] == (2, config.num_key_value_heads)
        assert key.shape[3] == value.shape[3] == config.head_dim
        assert key.shape[2] == value.shape[2] >= 3
    second = model(
        ids[:, 3:],
        positions[:, 3:],
        first.past_key_values,
        first.cache_lengths,
        first.cache_start_positions,
        use_cache=True,
    )
    assert second.cache_lengths.tolist() == [5, 5]
    assert second.cache_start_positions.tolist() == [3, 10]
    assert all(key.shape[2] >= 5 for key, _ in second.past_key_values)


@pytest.mark.clause("M10.3")
def test_without_use_cache_no_cache_is_returned(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=58))
    ids, positions = m10.ids(1, 4, seed=59), m10.runs([0], 4)
    out = model(ids, positions)
    for name in ("past_key_values", "cache_lengths", "cache_start_positions"):
        assert getattr(out, name, None) is None, name


def mixed_rows(m10, model, lengths, origins, new, seed):
    """Each row's prefix cached alone, stacked with poisoned padding: the batch call's
    arguments (``new`` tokens of every row) and each row's logits alone."""
    B = len(lengths)
    ids = m10.ids(B, max(lengths) + new, seed=seed)
    rows, alone = [], []
    for b in range(B):
        n = lengths[b]
        row_ids = ids[b : b + 1, : n + new]
        row_positions = m10.runs([origins[b]], n + new)
        rows.append(model(row_ids[:, :n], row_positions[:, :n], use_cache=True).past_key_values)
        alone.append(model(row_ids, row_positions).logits[:, n:])
    past, cache_lengths = m10.poisoned_batch_cache(rows, lengths)
    starts = torch.tensor(origins, dtype=torch.long)
    new_ids = torch.stack([ids[b, lengths[b] : lengths[b] + new] for b in range(B)])
    positions = torch.stack([torch.arange(new) + origins[b] + lengths[b] for b in range(B)])
    return (new_ids, positions, past, cache_lengths, starts), torch.cat(alone)


@pytest.mark.clause("M10.4")
@pytest.mark.parametrize(
    ("lengths", "origins", "new"),
    [([1, 6, 3], [0, 4, 20], 1), ([5, 2], [9, 0], 3), ([2, 7, 4, 1], [30, 1, 0, 12], 2)],
    ids=["decode", "chunk", "four-rows"],
)
def test_rows_with_their_own_lengths_and_origins_compute_as_alone(m10, lengths, origins, new):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=60))
    call, alone = mixed_rows(m10, model, lengths, origins, new, seed=61)
    out = model(*call, use_cache=True)
    assert_close(out.logits, alone, atol=1e-4, rtol=1e-4)
    assert out.cache_lengths.tolist() == [n + new for n in lengths]
    assert out.cache_start_positions.tolist() == origins


@pytest.mark.clause("M10.5")
@pytest.mark.parametrize(
    ("lengths", "origins", "new"),
    [([1, 6, 3], [0, 4, 20], 1), ([5, 2], [9, 0], 3), ([4, 4], [0, 7], 2)],
    ids=["decode", "chunk", "equal-lengths"],
)
def test_the_caller_cache_is_never_written(m10, lengths, origins, new):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=62))
    (ids, positions, past, cache_lengths, starts), _ = mixed_rows(
        m10, model, lengths, origins, new, seed=63
    )
    before = clone_past(past)
    lengths_before, starts_before = cache_lengths.clone(), starts.clone()
    out = model(ids, positions, past, cache_lengths, starts, use_cache=True)
    assert_past_unchanged(before, past, "past_key_values")
    assert torch.equal(cache_lengths, lengths_before) and torch.equal(starts, starts_before)
    model(ids[:, :1], positions[:, :1] + new, out.past_key_values, out.cache_lengths,
          out.cache_start_positions, use_cache=True)  # fmt: skip
    assert_past_unchanged(before, past, "past_key_values")
