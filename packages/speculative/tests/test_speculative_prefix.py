"""Extension: DecodeState.logits_from refuses a sequence that is not its own prefix; a model on
``meta`` is named as the problem (owner ``speculative_validation``).

A state caches ``sequence[:length]``; a call whose sequence differs there (a token
changed anywhere, the last cached one included, and not only the first) would feed
the rest against K/V of other tokens. Rejected before any model call: the state
(length, cache, kept logits) is as it was.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import CountingModel, candidate, test_device
from gptlab_testkit.models import cache_aware_modules

spec = candidate("SPECULATIVE_DECODING_MODULE")

pytestmark = [pytest.mark.owner("speculative_validation"), pytest.mark.extension]

MODULE = next(iter(cache_aware_modules()))


def model():
    return cache_aware_modules()[MODULE].make_test_model().to(test_device())


def state_after(prompt: list[int]):
    counting = CountingModel(model())
    state = spec.DecodeState(counting, 0, torch.device(test_device()))
    state.logits_from(prompt, len(prompt))
    return state, counting


@pytest.mark.parametrize("changed", [1, 3, 4], ids=["inside", "before last", "last cached"])
def test_logits_from_refuses_a_sequence_that_contradicts_the_cache(changed):
    prompt = [1, 2, 3, 4, 5]
    state, counting = state_after(prompt)
    before = (state.length, state.next_logits.clone(), counting.calls)
    other = list(prompt)
    other[changed] = (other[changed] + 1) % 16
    with pytest.raises(ValueError, match="sequence"):
        state.logits_from([*other, 6], len(prompt))
    assert (state.length, counting.calls) == (before[0], before[2])
    assert torch.equal(state.next_logits, before[1])
    state.logits_from([*prompt, 6], len(prompt))  # its own prefix: still fine


def test_logits_from_after_a_rollback_checks_the_kept_prefix_only():
    state, _ = state_after([1, 2, 3, 4, 5])
    state.rollback(3)
    state.logits_from([1, 2, 3, 9], 4)  # positions 3.. are free again
    with pytest.raises(ValueError, match="sequence"):
        state.logits_from([1, 7, 3, 9, 1], 5)


@pytest.mark.parametrize("role", ["target", "draft"])
def test_a_model_on_meta_is_named(role):
    meta = cache_aware_modules()[MODULE].make_test_model().to("meta")
    good = model()
    target, draft = (meta, good) if role == "target" else (good, meta)
    ids = torch.tensor([[1, 2, 3]], device=test_device())
    positions = torch.arange(3, device=test_device())[None]
    with pytest.raises(ValueError, match=rf"\b{role}\b.*meta") as raised:
        spec.speculative_generate(target, draft, ids, positions, 3, 2)
    assert "is on cpu" not in str(raised.value)
