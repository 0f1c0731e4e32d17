"""Tier 3: greedy and seeded sampling generation, EOS stopping, mode restoration, bounds."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, shares_storage, test_device

tg = candidate("TINY_GPT_MODULE")

pytestmark = [pytest.mark.tier3, pytest.mark.contract]


def ids(rows):
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def follow(transition, token, steps):
    chain = []
    for _ in range(steps):
        token = transition[token]
        chain.append(token)
    return chain


def multinomial_oracle(model, prompt, temperature, seed):
    """One draw from softmax(last logits / temperature) with an explicit generator."""
    with torch.no_grad():
        logits = model(prompt).logits[:, -1]  # [B, V]
    probabilities = torch.softmax(logits / temperature, dim=-1)
    generator = torch.Generator(device=test_device()).manual_seed(seed)
    return torch.multinomial(probabilities, 1, generator=generator)


@pytest.mark.owner("greedy_decoding")
def test_greedy_follows_hand_set_transition(transition_model, transition):
    output = transition_model.generate(ids([[5], [1]]), 6)
    expected = [[5, *follow(transition, 5, 6)], [1, *follow(transition, 1, 6)]]
    assert output.tolist() == expected


@pytest.mark.owner("greedy_decoding")
def test_greedy_matches_full_prefix_recomputation(make_model, make_tokens):
    model = make_model()
    prompt = make_tokens(2, 3)
    output = model.generate(prompt, 9)
    with torch.no_grad():
        for length in range(3, 12):
            expected = model(output[:, :length]).logits[:, -1].argmax(dim=-1)
            assert torch.equal(output[:, length], expected), f"token {length}"


@pytest.mark.owner("greedy_decoding")
def test_generate_returns_prompt_then_continuation(make_model, make_tokens):
    model = make_model()
    prompt = make_tokens(3, 4)
    output = model.generate(prompt, 5)
    assert output.shape == (3, 9)
    assert output.dtype == torch.long
    assert torch.equal(output[:, :4], prompt)


@pytest.mark.owner("greedy_decoding")
@pytest.mark.parametrize("training", [True, False])
def test_generate_restores_the_callers_mode(make_model, make_tokens, training, transition_model):
    for model in (make_model(dropout=0.2), transition_model):
        model.train(training)
        model.generate(make_tokens(2, 3, vocab_size=model.config.vocab_size), 4, eos_token_id=0)
        assert all(module.training == training for module in model.modules())


@pytest.mark.owner("greedy_decoding")
def test_generate_decodes_in_eval_mode(make_model, make_tokens):
    model = make_model(dropout=0.5)
    prompt = make_tokens(2, 4)
    expected = model.generate(prompt, 8)
    model.train()
    assert torch.equal(model.generate(prompt, 8), expected)


@pytest.mark.owner("sampler_determinism")
def test_one_sampling_step_matches_multinomial_oracle(make_model, make_tokens):
    model = make_model()
    prompt = make_tokens(4, 5)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(99)  # the global generator must not be what decides
        generator = torch.Generator(device=test_device()).manual_seed(1234)
        output = model.generate(prompt, 1, temperature=2.0, generator=generator)
    assert torch.equal(output[:, -1:], multinomial_oracle(model, prompt, 2.0, 1234))


@pytest.mark.owner("sampler_determinism")
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    temperature=st.floats(0.25, 4.0),
    batch_size=st.integers(1, 3),
    length=st.integers(1, 8),
)
def test_sampling_step_matches_oracle_for_any_seed(
    shared_model, make_tokens, seed, temperature, batch_size, length
):
    prompt = make_tokens(batch_size, length, seed=seed % 1000)
    generator = torch.Generator(device=test_device()).manual_seed(seed)
    output = shared_model.generate(prompt, 1, temperature=temperature, generator=generator)
    expected = multinomial_oracle(shared_model, prompt, temperature, seed)
    assert torch.equal(output[:, -1:], expected)


@pytest.mark.owner("sampler_determinism")
def test_equal_seeds_give_equal_multistep_samples(make_model, make_tokens):
    model = make_model(dropout=0.3).train()
    prompt = make_tokens(3, 2)
    samples = []
    for global_seed in (1, 2):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(global_seed)
            generator = torch.Generator(device=test_device()).manual_seed(42)
            samples.append(model.generate(prompt, 10, temperature=1.5, generator=generator))
    assert torch.equal(samples[0], samples[1])
    assert model.training


@pytest.mark.owner("eos_context")
def test_greedy_stops_at_eos(transition_model):
    output = transition_model.generate(ids([[1]]), 10, eos_token_id=0)
    assert output.tolist() == [[1, 2, 3, 0]]


@pytest.mark.owner("eos_context")
def test_batched_rows_wait_for_each_other_padded_with_eos(transition_model):
    output = transition_model.generate(ids([[4], [1], [5]]), 10, eos_token_id=0)
    assert output.tolist() == [
        [4, 0, 0, 0, 0, 0, 0],
        [1, 2, 3, 0, 0, 0, 0],
        [5, 6, 7, 1, 2, 3, 0],
    ]


@pytest.mark.owner("eos_context")
def test_eos_in_the_prompt_does_not_finish_a_row(transition_model):
    output = transition_model.generate(ids([[0, 5]]), 10, eos_token_id=0)
    assert output.tolist() == [[0, 5, 6, 7, 1, 2, 3, 0]]


@pytest.mark.owner("eos_context")
def test_budget_ends_generation_before_eos(transition_model):
    output = transition_model.generate(ids([[5], [4]]), 3, eos_token_id=0)
    assert output.tolist() == [[5, 6, 7, 1], [4, 0, 0, 0]]


@pytest.mark.owner("eos_context")
def test_zero_new_tokens_returns_a_copy_of_the_prompt(make_model, make_tokens):
    model = make_model()
    prompt = make_tokens(2, 4)
    output = model.generate(prompt, 0)
    assert torch.equal(output, prompt)
    assert not shares_storage(output, prompt)


@pytest.mark.rejection
@pytest.mark.owner("eos_context")
@pytest.mark.parametrize(
    "arguments",
    [{"max_new_tokens": -1}, {"temperature": -0.5}],
    ids=["negative_budget", "negative_temperature"],
)
def test_generate_rejects_invalid_arguments(make_model, make_tokens, arguments):
    model = make_model()
    with pytest.raises(ValueError):
        model.generate(make_tokens(2, 3), **{"max_new_tokens": 2, **arguments})


@pytest.mark.rejection
@pytest.mark.owner("eos_context")
@pytest.mark.parametrize("bad_prompt", ["float", "out_of_vocab", "one_dim"])
def test_generate_rejects_invalid_prompt(make_model, make_tokens, bad_prompt):
    model = make_model()
    prompt = make_tokens(2, 3)
    prompt = {
        "float": prompt.float(),
        "out_of_vocab": prompt + model.config.vocab_size,
        "one_dim": prompt[0],
    }[bad_prompt]
    with pytest.raises(ValueError):
        model.generate(prompt, 2)


@pytest.mark.owner("eos_context")
def test_a_later_row_finishing_first_does_not_stop_the_others(transition_model):
    output = transition_model.generate(ids([[1], [4]]), 10, eos_token_id=0)
    assert output.tolist() == [[1, 2, 3, 0], [4, 0, 0, 0]]


@pytest.mark.owner("eos_context")
def test_the_first_row_finishing_first_does_not_stop_the_others(transition_model):
    output = transition_model.generate(ids([[4], [5]]), 10, eos_token_id=0)
    assert output.tolist() == [[4, 0, 0, 0, 0, 0, 0], [5, 6, 7, 1, 2, 3, 0]]


@pytest.mark.owner("greedy_decoding")
def test_training_behaviour_is_back_after_generate(make_model, make_tokens):
    """Behaviour, not only flags: dropout acts again after generate in training mode."""
    model = make_model(dropout=0.5).train()
    tokens = make_tokens(2, 6)
    model.generate(tokens, 3)
    assert not torch.equal(model(tokens).logits, model(tokens).logits), "dropout is off"


@pytest.mark.owner("greedy_decoding")
def test_sampling_generate_restores_the_callers_mode(make_model, make_tokens):
    model = make_model(dropout=0.2).train()
    generator = torch.Generator(device=test_device()).manual_seed(3)
    model.generate(make_tokens(2, 3), 4, temperature=0.8, generator=generator)
    assert all(module.training for module in model.modules())
