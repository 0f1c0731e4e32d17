"""M03's advanced branch: the factories build M02's model, made cache-aware (clauses M03.n).

The candidate is `CACHE_AWARE_MODERN_MODULE` (default `cache_aware_lm.advanced`); the cache
contract itself (the ten checks) is the rest of this folder's contract suite, which runs on
this candidate when it is swapped. Here every expectation is computed in the test process,
before the candidate's call, from the candidate's own state dict, by M02's arithmetic
written out in `gptlab_testkit.models` (RMSNorm, split-half RoPE at absolute positions, the
decoder layer): the logits `modern_lm.ModernLM` gives on those weights, and the cached keys
and values. Suites reach sibling packages only through candidate variables, so the oracle
is that arithmetic, not modern_lm's module.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import Tensor

from gptlab_testkit import assert_close, test_device
from gptlab_testkit.candidates import candidate
from gptlab_testkit.models import checkpoint_shapes, decoder_layer, rms_norm, rope

pytestmark = [pytest.mark.contract]

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
FACTORIES = ("make_test_model", "make_eos_test_model")
# The test models' sizes (M03.2) and M02's defaults for the two numbers no key holds.
M02_CONFIG = SimpleNamespace(
    vocab_size=16,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    intermediate_size=64,
    max_position_embeddings=32,
    rope_theta=10000.0,
    rms_norm_eps=1e-6,
)
SHAPES = checkpoint_shapes(M02_CONFIG)
KV_HEADS, HEAD_DIM = M02_CONFIG.num_key_value_heads, M02_CONFIG.head_dim
ORIGINS = [3, 9]  # rows start at different nonzero absolute positions
LENGTH = 7
POISON = 1e3  # padding slots of a cache the test builds: any value (the contract's rule)


def _build(factory: str = "make_test_model"):
    model = getattr(candidate(VARIABLE), factory)()
    return model.to(test_device())


def _m02_state(model) -> dict[str, Tensor]:
    """The model's state dict, checked against M02's checkpoint table (names, then shapes)."""
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    assert sorted(state) == sorted(SHAPES), (
        f"state_dict keys are not M02's: missing {sorted(set(SHAPES) - set(state))}, "
        f"unexpected {sorted(set(state) - set(SHAPES))}"
    )
    shapes = {name: tuple(tensor.shape) for name, tensor in state.items()}
    assert shapes == SHAPES, {n: (shapes[n], SHAPES[n]) for n in SHAPES if shapes[n] != SHAPES[n]}
    return state


def _m02_logits(state: dict[str, Tensor], ids: Tensor, positions: Tensor) -> Tensor:
    """M02's logits from these weights, its arithmetic written out: embed, the pre-norm
    layers, the final RMSNorm, the head (untied: a tied candidate's two keys hold one tensor)."""
    x = state["model.embed_tokens.weight"][ids]
    for index in range(M02_CONFIG.num_hidden_layers):
        x = decoder_layer(M02_CONFIG, state, index, x, positions)
    x = rms_norm(x, state["model.norm.weight"], M02_CONFIG.rms_norm_eps)
    return x @ state["lm_head.weight"].T


def _batch(seed: int, origins: list[int] = ORIGINS, length: int = LENGTH):
    device = test_device()
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 16, (len(origins), length), generator=generator).to(device)
    positions = torch.tensor(origins, device=device)[:, None] + torch.arange(length, device=device)
    return ids, positions


def _oracle_kv(
    state: dict[str, Tensor], ids: Tensor, positions: Tensor
) -> list[tuple[Tensor, Tensor]]:
    """Each layer's M02 keys (rotated at the absolute positions) and values, [B, K, T, D]."""
    B, T = ids.shape
    x = state["model.embed_tokens.weight"][ids]
    layers = []
    for index in range(M02_CONFIG.num_hidden_layers):
        p = f"model.layers.{index}."
        normed = rms_norm(x, state[p + "input_layernorm.weight"], M02_CONFIG.rms_norm_eps)

        def heads(t: Tensor) -> Tensor:
            return t.reshape(B, T, KV_HEADS, HEAD_DIM).transpose(1, 2)

        keys = rope(heads(normed @ state[p + "self_attn.k_proj.weight"].T), positions, 10000.0)
        values = heads(normed @ state[p + "self_attn.v_proj.weight"].T)
        layers.append((keys, values))
        x = decoder_layer(M02_CONFIG, state, index, x, positions)
    return layers


def _cached_call(model, new_ids, new_positions, past, lengths, starts):
    """The candidate's continuation of a cache the test built; a refusal fails the test."""
    try:
        return model(
            new_ids,
            new_positions,
            past_key_values=past,
            cache_lengths=lengths,
            cache_start_positions=starts,
        )
    except (ValueError, RuntimeError, TypeError, IndexError) as error:
        pytest.fail(f"refused a cache of M02's K/V heads ([B, {KV_HEADS}, S, {HEAD_DIM}]): {error}")


@pytest.mark.owner("m03_checkpoint")
@pytest.mark.clause("M03.1")
def test_factories_build_equal_models_in_eval_mode():
    for factory in FACTORIES:
        first, second = _build(factory), _build(factory)
        assert not first.training, f"{factory}() is not in eval mode"
        one, two = first.state_dict(), second.state_dict()
        assert sorted(one) == sorted(two), f"{factory}(): two calls differ in keys"
        for name in one:
            assert torch.equal(one[name], two[name]), f"{factory}(): two calls differ at {name}"


@pytest.mark.owner("m03_checkpoint")
@pytest.mark.clause("M03.1")
def test_eos_test_model_follows_its_transition_table():
    model = _build("make_eos_test_model")
    device = test_device()
    prompt = torch.tensor([[1], [2]], device=device)
    tokens = model.generate(prompt, torch.zeros_like(prompt), 4, eos_token_id=0)
    assert tokens.tolist() == [[1, 0, 0], [2, 3, 0]]


@pytest.mark.owner("m03_checkpoint")
@pytest.mark.clause("M03.2")
@pytest.mark.parametrize("factory", FACTORIES)
def test_state_dict_has_m02s_checkpoint_names(factory):
    names = sorted(_build(factory).state_dict())
    assert names == sorted(SHAPES), (
        f"missing {sorted(set(SHAPES) - set(names))}, unexpected {sorted(set(names) - set(SHAPES))}"
    )


@pytest.mark.owner("m03_checkpoint")
@pytest.mark.clause("M03.3")
@pytest.mark.parametrize("factory", FACTORIES)
def test_state_dict_has_m02s_checkpoint_shapes(factory):
    state = _build(factory).state_dict()
    shapes = {name: tuple(state[name].shape) for name in SHAPES if name in state}
    assert shapes == SHAPES, {
        n: (shapes.get(n), SHAPES[n]) for n in SHAPES if shapes.get(n) != SHAPES[n]
    }


@pytest.mark.owner("m03_logits")
@pytest.mark.clause("M03.4")
@pytest.mark.parametrize("factory", FACTORIES)
def test_uncached_logits_equal_m02s_on_the_same_weights(factory):
    model = _build(factory)
    state = _m02_state(model)
    ids, positions = _batch(seed=11)
    with torch.no_grad():
        expected = _m02_logits(state, ids, positions)
    assert_close(model(ids, positions).logits, expected, f"{factory}() logits vs M02's")


@pytest.mark.owner("m03_gqa_cache")
@pytest.mark.clause("M03.5")
def test_cache_holds_the_kv_heads_only():
    model = _build()
    ids, positions = _batch(seed=12)
    prefill = model(ids[:, :4], positions[:, :4], use_cache=True)
    step = model(
        ids[:, 4:5],
        positions[:, 4:5],
        past_key_values=prefill.past_key_values,
        cache_lengths=prefill.cache_lengths,
        cache_start_positions=prefill.cache_start_positions,
        use_cache=True,
    )
    for out, length in ((prefill, 4), (step, 5)):
        assert len(out.past_key_values) == M02_CONFIG.num_hidden_layers
        for index, (keys, values) in enumerate(out.past_key_values):
            for name, tensor in (("keys", keys), ("values", values)):
                expected = (len(ORIGINS), KV_HEADS, length, HEAD_DIM)
                assert tuple(tensor.shape) == expected, (
                    f"layer {index} {name}: {tuple(tensor.shape)}, expected {expected} "
                    "(the K/V heads, never repeated to the query heads)"
                )


def _assert_cache_is_m02s(past, expected, length):
    assert len(past) == len(expected), f"{len(past)} layers, expected {len(expected)}"
    for index, ((keys, values), (want_k, want_v)) in enumerate(zip(past, expected, strict=True)):
        assert tuple(keys.shape[:2]) == tuple(want_k.shape[:2]), (
            f"layer {index}: cache {tuple(keys.shape)}, expected [B, {KV_HEADS}, S, {HEAD_DIM}]"
        )
        assert_close(keys[:, :, :length], want_k, f"layer {index} cached keys vs M02's")
        assert_close(values[:, :, :length], want_v, f"layer {index} cached values vs M02's")


@pytest.mark.owner("m03_gqa_cache")
@pytest.mark.clause("M03.6")
def test_prefill_caches_m02s_keys_at_absolute_positions():
    model = _build()
    state = _m02_state(model)
    ids, positions = _batch(seed=13)
    expected = _oracle_kv(state, ids, positions)
    out = model(ids, positions, use_cache=True)
    _assert_cache_is_m02s(out.past_key_values, expected, LENGTH)


@pytest.mark.owner("m03_gqa_cache")
@pytest.mark.clause("M03.6")
def test_chunk_after_a_cache_appends_m02s_keys_at_absolute_positions():
    model = _build()
    state = _m02_state(model)
    ids, positions = _batch(seed=14)
    expected = _oracle_kv(state, ids, positions)
    prefill = model(ids[:, :3], positions[:, :3], use_cache=True)
    out = model(
        ids[:, 3:],
        positions[:, 3:],
        past_key_values=prefill.past_key_values,
        cache_lengths=prefill.cache_lengths,
        cache_start_positions=prefill.cache_start_positions,
        use_cache=True,
    )
    _assert_cache_is_m02s(out.past_key_values, expected, LENGTH)


def _continue_an_m02_cache(new_tokens: int, seed: int) -> None:
    """Rows with different cached lengths and origins, their K/V computed here as M02's,
    padding poisoned; the candidate's logits for the new tokens must be M02's full-row ones."""
    model = _build()
    state = _m02_state(model)
    device = test_device()
    lengths, origins = [5, 2], [7, 3]
    storage = max(lengths) + 2
    rows = [_batch(seed + row, [origin], length + new_tokens) for row, (length, origin) in
            enumerate(zip(lengths, origins, strict=True))]  # fmt: skip
    expected, layers = [], []
    with torch.no_grad():
        for (ids, positions), length in zip(rows, lengths, strict=True):
            expected.append(_m02_logits(state, ids, positions)[:, length:])
            layers.append(_oracle_kv(state, ids[:, :length], positions[:, :length]))
    past = []
    for index in range(M02_CONFIG.num_hidden_layers):
        pair = []
        for kind in (0, 1):
            full = torch.full((2, KV_HEADS, storage, HEAD_DIM), POISON, device=device)
            for row, length in enumerate(lengths):
                full[row, :, :length] = layers[row][index][kind][0]
            pair.append(full)
        past.append((pair[0], pair[1]))
    new_ids = torch.cat([ids[:, length:] for (ids, _), length in zip(rows, lengths, strict=True)])
    new_positions = torch.cat(
        [positions[:, length:] for (_, positions), length in zip(rows, lengths, strict=True)]
    )
    out = _cached_call(
        model,
        new_ids,
        new_positions,
        tuple(past),
        torch.tensor(lengths, device=device),
        torch.tensor(origins, device=device),
    )
    assert_close(out.logits, torch.cat(expected), "logits after an M02 cache vs M02's full rows")


@pytest.mark.owner("m03_gqa_cache")
@pytest.mark.clause("M03.7")
def test_decode_step_continues_a_cache_of_m02s_keys_and_values():
    _continue_an_m02_cache(new_tokens=1, seed=20)


@pytest.mark.owner("m03_gqa_cache")
@pytest.mark.clause("M03.7")
def test_chunk_continues_a_cache_of_m02s_keys_and_values():
    _continue_an_m02_cache(new_tokens=3, seed=30)
