"""The modern variant equals Hugging Face ``LlamaForCausalLM`` on the same weights.

Extension tests of ``cache_aware_lm.modern``'s Llama converter, against an oracle
nobody here wrote: transformers' Llama with grouped-query attention (its eager,
manual-softmax attention). Small random configs, no downloads; the tests skip
when transformers is not installed (``gptlab-cache-aware-lm[hf]``). transformers
is imported by a fixture, not at collection: runs that deselect these tests (the
contract-only grading ladder) never pay for its import.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch
from torch import Tensor

from cache_aware_lm import serve_generate
from cache_aware_lm.modern import (
    ModernCacheAwareLM,
    ModernConfig,
    config_from_llama,
    from_llama_state_dict,
    llama_config_kwargs,
    to_llama_state_dict,
)
from gptlab_testkit import assert_close, candidate, test_device

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.extension, pytest.mark.owner("llama_interop")]

CONFIG = ModernConfig(
    vocab_size=96,
    context_length=64,
    d_model=32,
    n_layers=2,
    n_heads=4,
    n_kv_heads=2,
    d_ff=56,
    rms_norm_eps=0.1,  # far from the default, so a dropped epsilon shows in the logits
    rope_theta=5000.0,
)


def random_modern_model(config: ModernConfig = CONFIG, seed: int = 0) -> ModernCacheAwareLM:
    """Default init plus random RMSNorm gains, so a mis-mapped norm weight shows."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ModernCacheAwareLM(config)
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if name.endswith("norm.weight"):
                    parameter.uniform_(0.5, 1.5)
    return model.to(test_device()).eval()


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def cache_name(transformers) -> str:
    """transformers 5.x renamed past_key_values to cache (inputs and outputs); 4.x did not."""
    forward = inspect.signature(transformers.LlamaForCausalLM.forward).parameters
    return "cache" if "cache" in forward else "past_key_values"


def llama_config(transformers, config: ModernConfig = CONFIG, **overrides: object):
    kwargs = {
        **llama_config_kwargs(config),
        "attn_implementation": "eager",
        "bos_token_id": None,
        "eos_token_id": None,
        "pad_token_id": None,
        **overrides,
    }
    return transformers.LlamaConfig(**kwargs)


def llama_from(transformers, model: ModernCacheAwareLM):
    llama = transformers.LlamaForCausalLM(llama_config(transformers, model.config))
    llama.load_state_dict(to_llama_state_dict(model.state_dict()), strict=True)
    return llama.to(test_device()).eval()


def random_ids(batch: int, length: int, seed: int) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, CONFIG.vocab_size, (batch, length), generator=generator).to(
        test_device()
    )


def position_rows(origins: list[int], length: int) -> Tensor:
    device = test_device()
    return torch.tensor(origins, device=device)[:, None] + torch.arange(length, device=device)


@pytest.fixture(scope="module")
def pair(transformers):
    model = random_modern_model()
    return model, llama_from(transformers, model)


def llama_greedy(llama, ids: Tensor, positions: Tensor, new_tokens: int, name: str) -> Tensor:
    """Greedy decoding driven by explicit position_ids (any origin), transformers' own cache."""
    with torch.no_grad():
        out = llama(input_ids=ids, position_ids=positions, use_cache=True)
        tokens, next_position = [ids], positions[:, -1:] + 1
        for step in range(new_tokens):
            next_token = out.logits[:, -1].argmax(dim=-1, keepdim=True)
            tokens.append(next_token)
            if step == new_tokens - 1:
                break
            out = llama(
                input_ids=next_token,
                position_ids=next_position,
                use_cache=True,
                **{name: getattr(out, name)},
            )
            next_position = next_position + 1
    return torch.cat(tokens, dim=1)


# ---- logits ---------------------------------------------------------------------------


def test_logits_equal_llama_from_position_zero(pair):
    model, llama = pair
    ids = random_ids(2, 12, seed=1)
    with torch.no_grad():
        expected = llama(input_ids=ids).logits
    assert_close(model(ids, position_rows([0, 0], 12)).logits, expected, "logits vs Llama")


def test_logits_equal_llama_at_nonzero_position_origins(pair):
    model, llama = pair
    ids = random_ids(3, 9, seed=2)
    positions = position_rows([5, 0, 31], 9)
    with torch.no_grad():
        expected = llama(input_ids=ids, position_ids=positions).logits
    assert_close(model(ids, positions).logits, expected, "logits at origins 5, 0, 31")


def test_cached_chunk_logits_equal_llama_cached_chunk(pair, transformers):
    model, llama = pair
    name = cache_name(transformers)
    ids, positions = random_ids(2, 10, seed=3), position_rows([3, 11], 10)
    with torch.no_grad():
        prefix = llama(input_ids=ids[:, :6], position_ids=positions[:, :6], use_cache=True)
        expected = llama(
            input_ids=ids[:, 6:],
            position_ids=positions[:, 6:],
            **{name: getattr(prefix, name)},
        ).logits
    ours = model(ids[:, :6], positions[:, :6], use_cache=True)
    suffix = model(
        ids[:, 6:],
        positions[:, 6:],
        past_key_values=ours.past_key_values,
        cache_lengths=ours.cache_lengths,
        cache_start_positions=ours.cache_start_positions,
    )
    assert_close(suffix.logits, expected, "suffix logits after a cached prefix")


# ---- greedy tokens ----------------------------------------------------------------------


def test_greedy_tokens_equal_llama_generate(pair):
    model, llama = pair
    ids = random_ids(2, 6, seed=4)
    with torch.no_grad():
        expected = llama.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=16,
            do_sample=False,
            pad_token_id=0,
        )
    assert torch.equal(model.generate(ids, position_rows([0, 0], 6), 16), expected)


def test_greedy_tokens_at_nonzero_origins_equal_llama_decoding(pair, transformers):
    model, llama = pair
    ids, positions = random_ids(3, 5, seed=5), position_rows([7, 0, 20], 5)
    expected = llama_greedy(llama, ids, positions, 14, cache_name(transformers))
    assert torch.equal(model.generate(ids, positions, 14), expected)


def test_serving_path_tokens_equal_llama_decoding(pair, transformers):
    model, llama = pair
    origins = [2, 9]
    ids, positions = random_ids(2, 4, seed=6), position_rows(origins, 4)
    storage = kvc.KVCache(
        CONFIG.n_layers,
        2,
        CONFIG.n_kv_heads,
        24,
        CONFIG.head_dim,
        device=test_device(),
        start_positions=torch.tensor(origins, device=test_device()),
    )
    expected = llama_greedy(llama, ids, positions, 12, cache_name(transformers))
    assert torch.equal(serve_generate(model, ids, positions, 12, storage), expected)


# ---- the converter ------------------------------------------------------------------------


def test_llama_checkpoint_loads_into_the_modern_variant(transformers):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        llama = transformers.LlamaForCausalLM(llama_config(transformers))
    llama = llama.to(test_device()).eval()
    model = ModernCacheAwareLM(config_from_llama(llama.config)).to(test_device()).eval()
    model.load_state_dict(from_llama_state_dict(llama.state_dict()), strict=True)
    ids = random_ids(2, 8, seed=8)
    with torch.no_grad():
        expected = llama(input_ids=ids).logits
    assert_close(model(ids, position_rows([0, 0], 8)).logits, expected, "converted Llama logits")


def test_tied_llama_checkpoint_gets_the_embedding_as_its_head(transformers):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(9)
        llama = transformers.LlamaForCausalLM(llama_config(transformers, tie_word_embeddings=True))
    llama = llama.to(test_device()).eval()
    state = {k: v for k, v in llama.state_dict().items() if k != "lm_head.weight"}  # as saved
    model = ModernCacheAwareLM(config_from_llama(llama.config)).to(test_device()).eval()
    model.load_state_dict(from_llama_state_dict(state), strict=True)
    ids = random_ids(1, 8, seed=10)
    with torch.no_grad():
        expected = llama(input_ids=ids).logits
    assert_close(model(ids, position_rows([0], 8)).logits, expected, "tied-head logits")


def test_config_and_state_dict_round_trip(transformers):
    model = random_modern_model(seed=11)
    assert config_from_llama(llama_config(transformers, model.config)) == model.config
    state = model.state_dict()
    back = from_llama_state_dict(to_llama_state_dict(state))
    assert back.keys() == state.keys()
    assert all(torch.equal(back[name], state[name]) for name in state)


@pytest.mark.parametrize(
    "override",
    [
        {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
        {"hidden_act": "gelu"},
        {"attention_bias": True},
        {"mlp_bias": True},
    ],
    ids=["scaled-rope", "gelu", "attention-bias", "mlp-bias"],
)
def test_unsupported_llama_configs_are_rejected(transformers, override):
    config = llama_config(transformers, **override)
    with pytest.raises(ValueError):
        config_from_llama(config)


def test_unknown_state_dict_entries_are_rejected():
    llama_state = to_llama_state_dict(random_modern_model(seed=12).state_dict())
    llama_state["model.layers.0.self_attn.q_proj.bias"] = torch.zeros(CONFIG.d_model)
    with pytest.raises(ValueError, match="q_proj.bias"):
        from_llama_state_dict(llama_state)
    with pytest.raises(ValueError):
        to_llama_state_dict({**random_modern_model(seed=12).state_dict(), "extra": torch.zeros(1)})


def test_grouped_query_heads_survive_the_round_trip_through_llama(transformers):
    """A GQA config with one key/value head (the extreme group) still equals Llama."""
    config = dataclasses.replace(CONFIG, n_kv_heads=1)
    model = random_modern_model(config, seed=13)
    llama = llama_from(transformers, model)
    ids = random_ids(2, 7, seed=14)
    positions = position_rows([4, 1], 7)
    with torch.no_grad():
        expected = llama(input_ids=ids, position_ids=positions).logits
    assert_close(model(ids, positions).logits, expected, "single-kv-head logits")
