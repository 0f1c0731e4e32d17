"""Bad head, expert, position and cache configurations fail before anything changes (M10.8)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_past_unchanged, candidate, clone_past

fragment = candidate("FRAGMENT_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("fragment_boundary")]


@pytest.mark.clause("M10.8")
@pytest.mark.parametrize(
    "overrides",
    [
        {"hidden_size": 30},  # != heads x head_dim
        {"num_key_value_heads": 3},  # does not divide the query heads
        {"experts_per_token": 5},  # more than the experts
        {"num_experts": 0},
        {"experts_per_token": 0},
    ],
    ids=["hidden-not-heads", "kv-not-divisor", "k-above-experts", "no-experts", "k-zero"],
)
def test_a_bad_config_is_refused_before_a_model_exists(m10, overrides):
    with pytest.raises((ValueError, TypeError)):
        m10.model(m10.config(**overrides))


def prefix(m10, model, lengths=(3, 3), origins=(0, 5)):
    ids = m10.ids(len(lengths), max(lengths), seed=90)
    out = model(ids, m10.runs(list(origins), max(lengths)), use_cache=True)
    return out.past_key_values, torch.tensor(list(lengths)), torch.tensor(list(origins))


def bad_calls(m10, config, model, past, lengths, starts):
    """{name: call}: each breaks one rule of the positions or the cache."""
    ids1 = m10.ids(2, 1, seed=91)
    next_positions = (starts + lengths)[:, None]
    layers = config.num_hidden_layers
    key, value = past[0]
    widened = ((key.repeat(1, 2, 1, 1), value.repeat(1, 2, 1, 1)), *past[1:])
    return {
        "position-at-context": lambda: model(ids1, torch.tensor([[64], [3]])),
        "run-past-context": lambda: model(m10.ids(1, 4, seed=92), m10.runs([62], 4)),
        "decode-at-context": lambda: model(
            ids1[:1],
            torch.tensor([[64]]),
            tuple((k[:1], v[:1]) for k, v in past),
            torch.tensor([3]),
            torch.tensor([61]),
        ),
        "negative-position": lambda: model(ids1, torch.tensor([[-1], [0]])),
        "gap-after-cache": lambda: model(ids1, next_positions + 1, past, lengths, starts),
        "gap-inside-row": lambda: model(m10.ids(1, 3, seed=93), torch.tensor([[0, 1, 3]])),
        "missing-layer": lambda: model(ids1, next_positions, past[: layers - 1], lengths, starts),
        "wrong-kv-heads": lambda: model(ids1, next_positions, widened, lengths, starts),
        "length-beyond-storage": lambda: model(ids1, next_positions + 5, past, lengths + 5, starts),
        "lengths-without-cache": lambda: model(ids1, next_positions, None, lengths, starts),
    }


CASES = [
    "position-at-context", "run-past-context", "decode-at-context", "negative-position",
    "gap-after-cache", "gap-inside-row", "missing-layer", "wrong-kv-heads",
    "length-beyond-storage", "lengths-without-cache",
]  # fmt: skip


@pytest.mark.clause("M10.8")
@pytest.mark.parametrize("case", CASES)
def test_a_bad_call_fails_before_anything_changes(m10, case):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=94))
    past, lengths, starts = prefix(m10, model)
    calls = bad_calls(m10, config, model, past, lengths, starts)
    before_past = clone_past(past)
    before_state = {name: t.clone() for name, t in model.state_dict().items()}
    with pytest.raises(ValueError):
        calls[case]()
    after_state = model.state_dict()
    assert after_state.keys() == before_state.keys()
    for name, tensor in before_state.items():
        assert torch.equal(after_state[name], tensor), name
    assert_past_unchanged(before_past, past, "past_key_values")
