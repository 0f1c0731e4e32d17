"""P11 sample_next_token(logits, *, temperature, top_k=None, top_p=None, generator)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import (
    BAD_VALUE,
    assert_rejects,
    boundary_settings,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import (
    SAMPLERS,
    assert_binds,
    drawn_tokens,
    forbidding,
    inputs_untouched,
    seeded,
    seeded_generator,
)

drill = candidate("DRILL_P11_MODULE")

pytestmark = [pytest.mark.owner("p11"), pytest.mark.contract]


def sample(logits, **options) -> list[int]:
    return drawn_tokens(drill.sample_next_token(logits, **options), logits.shape[0])


def kept_tokens(row: list[float], temperature: float, top_k=None, top_p=None) -> set[int]:
    """The tokens a filtered row may draw, in float64 and plain Python: the k largest (ties
    at the k-th kept), then the smallest most-probable prefix of the tempered, top-k
    distribution whose mass reaches p (ties with its last token kept)."""
    scaled = [x / temperature for x in row]
    kept = {i for i, x in enumerate(scaled) if x > -math.inf}
    if top_k:
        kth = sorted(scaled, reverse=True)[top_k - 1]
        kept = {i for i in kept if scaled[i] >= kth}
    if top_p is not None and top_p < 1:
        top = max(scaled[i] for i in kept)
        weights = {i: math.exp(scaled[i] - top) for i in kept}
        total = sum(weights.values())
        mass, boundary = 0.0, None
        for i in sorted(kept, key=lambda i: -scaled[i]):
            boundary = scaled[i]
            mass += weights[i] / total
            if mass >= top_p:
                break
        kept = {i for i in kept if scaled[i] >= boundary}
    return kept


def state(generator: torch.Generator) -> torch.Tensor:
    return generator.get_state().clone()


def sample_without_failing(logits, **options) -> list[int]:
    """`sample`, where the contract promises a draw: any error is the test's failure."""
    try:
        return sample(logits, **options)
    except Exception as error:
        raise AssertionError(
            f"valid input was not sampled: {type(error).__name__}: {error}"
        ) from error


@pytest.mark.clause("P11.5")
def test_temperature_one_unfiltered_equals_torch_multinomial():
    logits = seeded(6, 11, seed=1)

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    got = sample(logits, temperature=1.0, generator=seeded_generator(7))

    independent = seeded_generator(7)
    want = torch.multinomial(torch.softmax(logits_given, dim=-1), 1, generator=independent)
    assert got == want.flatten().tolist()


@pytest.mark.clause("P11.5")
def test_the_generator_advances_by_exactly_the_one_draw():
    logits = seeded(6, 11, seed=31)
    generator = seeded_generator(7)

    sample(logits, temperature=0.7, top_k=5, top_p=0.9, generator=generator)

    independent = seeded_generator(7)
    torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=independent)
    assert torch.equal(state(generator), state(independent)), "not one draw of B tokens"


@pytest.mark.clause("P11.5")
def test_a_tempered_draw_equals_multinomial_over_the_tempered_softmax():
    logits = seeded(6, 11, seed=2)

    # the oracle first: the call's writes cannot reach it
    probs = torch.softmax(logits / 0.5, dim=-1)
    got = sample(logits, temperature=0.5, generator=seeded_generator(8))

    want = torch.multinomial(probs, 1, generator=seeded_generator(8))
    assert got == want.flatten().tolist()


@pytest.mark.clause("P11.18")
def test_equal_seeds_give_equal_draws():
    logits = seeded(32, 20, seed=3)
    options = {"temperature": 0.8, "top_k": 10, "top_p": 0.9}

    first = sample(logits, generator=seeded_generator(11), **options)
    second = sample(logits, generator=seeded_generator(11), **options)

    assert first == second


@pytest.mark.clause("P11.5")
def test_different_seeds_give_different_draws():
    logits = torch.zeros(64, 50, device=test_device())  # uniform: 64 equal draws are ~impossible

    first = sample(logits, temperature=1.0, generator=seeded_generator(12))
    second = sample(logits, temperature=1.0, generator=seeded_generator(13))

    assert first != second


@pytest.mark.clause("P11.5")
def test_the_generator_state_advances_with_each_draw():
    logits = seeded(4, 9, seed=4)
    generator = seeded_generator(14)
    before = state(generator)

    first = sample(logits, temperature=1.0, generator=generator)
    after_one = state(generator)
    second = sample(logits, temperature=1.0, generator=generator)

    assert not torch.equal(after_one, before), "the generator's state did not advance"
    fresh = sample(logits, temperature=1.0, generator=seeded_generator(14))
    assert fresh == first, "a fresh generator with the same seed must repeat the first draw"
    assert not torch.equal(state(generator), after_one), "the second draw did not advance it"
    assert len(second) == 4


@pytest.mark.clause("P11.4")
def test_greedy_takes_the_argmax_without_drawing():
    logits = seeded(5, 13, seed=5)
    generator = seeded_generator(15)
    before = state(generator)

    # the oracle first: the call's writes cannot reach it
    want = logits.argmax(dim=-1).tolist()
    with forbidding(*SAMPLERS, what="greedy sample_next_token"):
        got = sample(logits, temperature=0.0, generator=generator)

    assert got == want
    assert torch.equal(state(generator), before), "greedy decoding advanced the generator"


@pytest.mark.clause("P11.4")
def test_greedy_ignores_the_filters():
    logits = seeded(5, 13, seed=6)

    # the oracle first: the call's writes cannot reach it
    want = logits.argmax(dim=-1).tolist()
    with forbidding(*SAMPLERS, what="greedy sample_next_token"):
        got = sample(logits, temperature=0, top_k=3, top_p=0.5, generator=seeded_generator(16))

    assert got == want


@pytest.mark.clause("P11.6")
def test_tokens_outside_the_top_k_are_never_drawn():
    row = seeded(1, 12, seed=7)
    logits = row.expand(400, 12).contiguous()

    got = sample(logits, temperature=1.5, top_k=3, generator=seeded_generator(17))

    allowed = set(row[0].topk(3).indices.tolist())
    assert set(got) <= allowed, f"drew {sorted(set(got) - allowed)} outside the top 3"
    assert len(set(got)) > 1, "400 draws over three tokens gave one token"


@pytest.mark.clause("P11.7")
def test_top_p_keeps_the_nucleus_of_the_tempered_distribution():
    # At temperature 1 the nucleus for p=0.6 is {0} (0.63 > 0.6); at temperature 2 the
    # tempered probabilities are 0.41, 0.25, 0.15, ...: the nucleus grows to {0, 1}.
    row = torch.tensor([[2.0, 1.0, 0.0, -1.0, -2.0, -3.0]], device=test_device())
    logits = row.expand(300, 6).contiguous()

    got = sample(logits, temperature=2.0, top_p=0.6, generator=seeded_generator(18))

    assert set(got) == kept_tokens(row[0].tolist(), 2.0, top_p=0.6) == {0, 1}


@pytest.mark.clause("P11.6", "P11.7")
def test_top_p_applies_to_the_top_k_distribution():
    # top_k=2 renormalises to {0: 0.73, 1: 0.27}; top_p=0.7 then keeps {0} alone
    # (over the whole vocabulary token 0 holds only 0.63 and p=0.7 would keep two).
    row = torch.tensor([[2.0, 1.0, 0.0, -0.5]], device=test_device())
    logits = row.expand(200, 4).contiguous()

    got = sample(logits, temperature=1.0, top_k=2, top_p=0.7, generator=seeded_generator(19))

    assert set(got) == kept_tokens(row[0].tolist(), 1.0, top_k=2, top_p=0.7) == {0}


@pytest.mark.clause("P11.6", "P11.7")
@boundary_settings(20)
@given(data=st.data())
def test_any_filtered_draw_lies_inside_the_loop_oracles_kept_set(data):
    B = data.draw(st.integers(1, 4), label="B")
    V = data.draw(st.integers(1, 12), label="V")
    temperature = data.draw(st.sampled_from([0.3, 1.0, 2.5]), label="temperature")
    top_k = data.draw(st.one_of(st.none(), st.integers(1, V)), label="top_k")
    top_p = data.draw(st.one_of(st.none(), st.sampled_from([0.05, 0.5, 0.9, 1.0])), label="top_p")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    logits = seeded(B, V, seed=seed) * 3

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    got = sample(logits, temperature=temperature, top_k=top_k, top_p=top_p,
                 generator=seeded_generator(seed))  # fmt: skip

    for b, token in enumerate(got):
        kept = kept_tokens(logits_given[b].tolist(), temperature, top_k, top_p)
        assert token in kept, f"row {b} drew {token}, outside {sorted(kept)}"


@pytest.mark.clause("P11.8")
@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, None), (3.0, 0.99)])
def test_forbidden_minus_inf_tokens_are_never_drawn(temperature, top_p):
    logits = seeded(200, 6, seed=8)
    logits[:, ::2] = float("-inf")

    got = sample(logits, temperature=temperature, top_p=top_p, generator=seeded_generator(20))

    assert all(token % 2 == 1 for token in got)


@pytest.mark.clause("P11.2", "P11.3")
def test_tokens_are_integer_ids_on_the_logits_device():
    logits = seeded(3, 7, seed=10)

    result = drill.sample_next_token(logits, temperature=1.0, generator=seeded_generator(22))

    assert result.device == logits.device
    assert all(0 <= token < 7 for token in drawn_tokens(result, 3))


# ---- rejection: valid in every respect but one, before the generator is touched ----


def rejects_before_drawing(
    argument: str | tuple[str, ...],
    logits: torch.Tensor,
    errors=BAD_VALUE,
    values=(),
    **options,
) -> None:
    generator = options.pop("generator", None) or seeded_generator(23)
    before = state(generator)
    with inputs_untouched(logits=logits):
        assert_rejects(
            lambda: drill.sample_next_token(logits, generator=generator, **options),
            errors,
            argument,
            values=values,
        )
    assert torch.equal(state(generator), before), "a rejected call advanced the generator"


@pytest.mark.clause("P11.11", "P11.16")
@pytest.mark.parametrize("poison", ["nan", "+inf", "all -inf"])
def test_an_invalid_row_is_rejected_before_sampling(poison):
    logits = seeded(3, 6, seed=11)
    if poison == "all -inf":
        logits[1] = float("-inf")
    else:
        logits[1, 4] = float(poison.lstrip("+"))

    rejects_before_drawing("logits", logits, temperature=1.0)


@pytest.mark.clause("P11.1")
def test_the_signature_takes_logits_positionally_and_the_rest_by_keyword():
    logits = seeded(2, 5, seed=39)
    generator = seeded_generator(40)

    assert_binds(drill.sample_next_token, logits, temperature=1.0, generator=generator)
    assert_binds(
        drill.sample_next_token, logits, temperature=1.0, top_k=2, top_p=0.5, generator=generator
    )
    assert len(sample(logits, temperature=1.0, generator=generator)) == 2


@pytest.mark.clause("P11.2", "P11.3", "P11.4")
def test_greedy_ids_are_integers_one_per_row():
    logits = seeded(3, 7, seed=41)

    # the oracle first: the call's writes cannot reach it
    want = logits.argmax(-1).tolist()
    result = drill.sample_next_token(logits, temperature=0.0, generator=seeded_generator(42))

    assert result.dtype != torch.bool and not result.is_complex()
    assert drawn_tokens(result, 3) == want


@pytest.mark.clause("P11.3")
def test_drawn_ids_are_not_booleans():
    logits = seeded(3, 2, seed=43)

    result = drill.sample_next_token(logits, temperature=1.0, generator=seeded_generator(44))

    assert result.dtype != torch.bool and not result.is_complex()
    drawn_tokens(result, 3)


@pytest.mark.clause("P11.6")
@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_tokens_tied_with_the_kth_largest_stay_drawable(temperature):
    row = torch.tensor([[3.0, 1.0, 2.0, 2.0, 0.0]], device=test_device())
    logits = row.expand(400, 5).contiguous()

    got = sample(logits, temperature=temperature, top_k=2, generator=seeded_generator(45))

    assert set(got) == {0, 2, 3}


@pytest.mark.clause("P11.17")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_the_logits_are_not_written(dtype):
    logits = seeded(4, 9, seed=48, dtype=dtype)

    with inputs_untouched(logits=logits):
        sample(logits, temperature=0.7, top_k=4, top_p=0.8, generator=seeded_generator(49))


@pytest.mark.clause("P11.18")
def test_the_global_rng_is_not_advanced():
    logits = seeded(4, 9, seed=50)
    torch.manual_seed(0)
    before = torch.get_rng_state()
    before_cuda = torch.cuda.get_rng_state() if logits.is_cuda else None

    sample(logits, temperature=1.0, generator=seeded_generator(51))

    assert torch.equal(torch.get_rng_state(), before), "the global RNG was used"
    if before_cuda is not None:
        assert torch.equal(torch.cuda.get_rng_state(), before_cuda), "the global RNG was used"


@pytest.mark.clause("P11.6")
def test_top_k_zero_is_off():
    logits = seeded(6, 11, seed=52)

    # the oracle first: the call's writes cannot reach it
    want = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=seeded_generator(53))
    got = sample_without_failing(logits, temperature=1.0, top_k=0, generator=seeded_generator(53))

    assert got == want.flatten().tolist()


@pytest.mark.clause("P11.6")
def test_top_k_one_always_draws_each_rows_maximum():
    logits = seeded(64, 5, seed=54)

    got = sample(logits, temperature=1.0, top_k=1, generator=seeded_generator(55))

    assert got == logits.argmax(dim=-1).tolist()
