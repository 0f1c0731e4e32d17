"""The whole fragment runs under torch.inference_mode() on a tiny random config (M10.10)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate

fragment = candidate("FRAGMENT_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("fragment_inference")]


def prefill_and_step(model, ids, positions):
    first = model(ids[:, :-1], positions[:, :-1], use_cache=True, return_router_state=True)
    step = model(ids[:, -1:], positions[:, -1:], first.past_key_values, first.cache_lengths,
                 first.cache_start_positions, use_cache=True, return_router_state=True)  # fmt: skip
    return first, step


@pytest.mark.clause("M10.10")
def test_prefill_and_decode_under_inference_mode_equal_no_grad(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=100))
    ids, positions = m10.ids(2, 6, seed=101), m10.runs([0, 9], 6)
    with torch.inference_mode():
        first, step = prefill_and_step(model, ids, positions)
    try:
        with torch.no_grad():
            want_first, want_step = prefill_and_step(model, ids, positions)
    except RuntimeError as error:  # a tensor made under inference_mode met this call
        pytest.fail(f"the first call after inference_mode failed: {error}")
    assert_close(first.logits, want_first.logits, atol=0, rtol=0)
    assert_close(step.logits, want_step.logits, atol=0, rtol=0)
    assert step.cache_lengths.tolist() == [6, 6]
    for layer in range(config.num_hidden_layers):
        assert step.expert_counts[layer].tolist() == want_step.expert_counts[layer].tolist()


@pytest.mark.clause("M10.10")
def test_a_freshly_built_random_model_runs_under_inference_mode(m10):
    config = m10.config(experts_per_token=1, num_key_value_heads=1)
    model = m10.model(config, seed=102)
    ids, positions = m10.ids(3, 4, seed=103), m10.runs([0, 1, 40], 4)
    with torch.inference_mode():
        out = model(ids, positions, use_cache=True, return_router_state=True)
    assert tuple(out.logits.shape) == (3, 4, config.vocab_size)
    assert torch.isfinite(out.logits).all()


@pytest.mark.clause("M10.10")
@pytest.mark.parametrize("after", ["no-grad", "grad", "cached-step"])
def test_the_model_works_as_before_after_inference_mode(m10, after):
    """Nothing computed under inference_mode stays in the model: the next call outside it
    (no_grad, autograd on, or a cached step) gives the logits a model never run there gives."""
    config = m10.config()
    state = m10.random_state(config, seed=104)
    used, fresh = m10.loaded(config, state), m10.loaded(config, state)
    ids, positions = m10.ids(2, 5, seed=105), m10.runs([0, 3], 5)
    with torch.inference_mode():
        prefill_and_step(used, ids, positions)

    def call(model):
        if after == "cached-step":
            with torch.no_grad():
                return prefill_and_step(model, ids, positions)[1].logits
        with torch.set_grad_enabled(after == "grad"):
            return model(ids, positions, return_router_state=True).logits.detach()

    want = call(fresh)
    try:
        got = call(used)
    except RuntimeError as error:  # a tensor made under inference_mode met this call
        pytest.fail(f"the first call after inference_mode failed: {error}")
    assert_close(got, want, atol=0, rtol=0)
