"""TinyGPT equals Hugging Face ``GPT2LMHeadModel`` on the same weights (extension).

An oracle nobody here wrote: transformers' GPT-2, with its eager (manual-softmax)
attention and Conv1D projections, for the exact ("gelu") and tanh ("gelu_new") GELU.
Small random configs, no downloads. Skipped when transformers is not installed
(``gptlab-tinygpt[hf]``) or when the module under TINY_GPT_MODULE does not ship this
project's GPT-2 converter (it is not part of the contract).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
import torch
from torch import Tensor

from gptlab_testkit import assert_close, assert_past_close, candidate, shares_storage, test_device

tg = candidate("TINY_GPT_MODULE")
CONVERTER_NAMES = (
    "from_gpt2_state_dict",
    "to_gpt2_state_dict",
    "gpt2_config_to_gpt_config",
    "gpt2_config_kwargs",
    "load_gpt2",
)
if not all(hasattr(tg, name) for name in CONVERTER_NAMES):
    pytest.skip("the candidate ships no GPT-2 converter", allow_module_level=True)
transformers = pytest.importorskip("transformers")

# transformers 5.x renamed past_key_values to cache (inputs and outputs); 4.x has the old name.
_GPT2_FORWARD = inspect.signature(transformers.GPT2LMHeadModel.forward).parameters
CACHE_NAME = "cache" if "cache" in _GPT2_FORWARD else "past_key_values"

pytestmark = [pytest.mark.extension, pytest.mark.owner("hf_interop")]

# Far from GPT-2's 1e-5, so a dropped or mis-mapped epsilon shows in the logits.
LAYER_NORM_EPS = 0.05
# gelu_approximate -> the transformers activation that computes it (written out here, not
# read from the converter).
GELU_VARIANTS = {"none": "gelu", "tanh": "gelu_new"}


def gpt2_config(sizes: dict[str, Any], activation: str, **overrides: Any) -> Any:
    """The HF config for the suite's tiny sizes, built by hand; EOS/BOS inside the vocab."""
    last_token = sizes["vocab_size"] - 1
    arguments = {
        "vocab_size": sizes["vocab_size"],
        "n_positions": sizes["context_length"],
        "n_embd": sizes["d_model"],
        "n_layer": sizes["n_layers"],
        "n_head": sizes["n_heads"],
        "n_inner": sizes["d_ff"],
        "activation_function": activation,
        "layer_norm_epsilon": LAYER_NORM_EPS,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "bos_token_id": last_token,
        "eos_token_id": last_token,
        "attn_implementation": "eager",
        **overrides,
    }
    return transformers.GPT2Config(**arguments)


@pytest.fixture(scope="module", params=list(GELU_VARIANTS), ids=["exact_gelu", "tanh_gelu"])
def pair(request, make_model, tiny_sizes) -> tuple[Any, Any]:
    """(TinyGPT, GPT2LMHeadModel) holding the same random weights, both eval, test_device()."""
    gelu = request.param
    tiny = make_model(seed=3, gelu_approximate=gelu, layer_norm_eps=LAYER_NORM_EPS)
    hf = transformers.GPT2LMHeadModel(gpt2_config(tiny_sizes, GELU_VARIANTS[gelu]))
    hf.load_state_dict(tg.to_gpt2_state_dict(tiny), strict=True)
    return tiny, hf.to(test_device()).eval()


def hf_forward(hf, input_ids: Tensor, cache: Any = None) -> tuple[Tensor, Any]:
    """GPT-2 logits and its returned cache, with an optional cache passed in."""
    extra = {} if cache is None else {CACHE_NAME: cache}
    with torch.no_grad():
        output = hf(input_ids, use_cache=True, **extra)
    return output.logits, output[CACHE_NAME]


def hf_layers(cache: Any) -> tuple[tuple[Tensor, Tensor], ...]:
    """Per-layer (key, value) from a legacy tuple or a transformers Cache object."""
    if isinstance(cache, tuple | list):
        return tuple((key, value) for key, value in cache)
    if hasattr(cache, "layers"):  # transformers >= 4.56: cache.layers[i].keys / .values
        return tuple((layer.keys, layer.values) for layer in cache.layers)
    return tuple(cache.to_legacy_cache())  # older DynamicCache


def tokens(B: int, T: int, seed: int, vocab_size: int) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (B, T), generator=generator).to(test_device())


def hf_greedy(hf, prompt: Tensor, max_new_tokens: int, eos_token_id: int) -> Tensor:
    """transformers' greedy generate, finished rows padded with EOS (TinyGPT's rule)."""
    with torch.no_grad():
        return hf.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            eos_token_id=eos_token_id,
            pad_token_id=eos_token_id,
        )


def test_logits_equal_gpt2(pair):
    tiny, hf = pair
    input_ids = tokens(2, tiny.config.context_length, seed=1, vocab_size=tiny.config.vocab_size)
    with torch.no_grad():
        logits = tiny(input_ids).logits
    assert_close(logits, hf_forward(hf, input_ids)[0], "logits")


def test_per_layer_key_values_equal_gpt2(pair):
    tiny, hf = pair
    input_ids = tokens(2, 9, seed=2, vocab_size=tiny.config.vocab_size)
    with torch.no_grad():
        past = tiny(input_ids, use_cache=True).past_key_values
    assert_past_close(past, hf_layers(hf_forward(hf, input_ids)[1]), "per-layer K/V")


def test_cached_chunk_after_prefix_equals_gpt2_with_past(pair):
    tiny, hf = pair
    input_ids = tokens(2, 11, seed=3, vocab_size=tiny.config.vocab_size)
    prefix, chunk = input_ids[:, :6], input_ids[:, 6:]
    with torch.no_grad():
        past = tiny(prefix, use_cache=True).past_key_values
        output = tiny(chunk, past_key_values=past, use_cache=True)
    hf_logits, hf_cache = hf_forward(hf, chunk, hf_forward(hf, prefix)[1])
    assert_close(output.logits, hf_logits, "chunk logits after a cached prefix")
    assert_past_close(output.past_key_values, hf_layers(hf_cache), "K/V after the chunk")


def test_greedy_generation_equals_gpt2(pair):
    tiny, hf = pair
    prompt = tokens(2, 4, seed=4, vocab_size=tiny.config.vocab_size)
    eos = tiny.config.vocab_size - 1
    expected = hf_greedy(hf, prompt, max_new_tokens=10, eos_token_id=eos)
    assert torch.equal(tiny.generate(prompt, 10, eos_token_id=eos), expected)


def test_greedy_generation_with_staggered_eos_equals_gpt2(pair):
    """EOS is the third token row 0 generates: row 0 stops early and is padded with EOS."""
    tiny, hf = pair
    prompt = tokens(2, 4, seed=5, vocab_size=tiny.config.vocab_size)
    eos = int(tiny.generate(prompt, 3)[0, -1])
    generated = tiny.generate(prompt, 10, eos_token_id=eos)
    assert torch.equal(generated, hf_greedy(hf, prompt, max_new_tokens=10, eos_token_id=eos))
    assert int(generated[0, -1]) == eos


def test_loaded_gpt2_model_equals_gpt2(pair):
    """load_gpt2 reads the HF config (sizes, epsilon, GELU variant) and the weights."""
    tiny, hf = pair
    loaded = tg.load_gpt2(hf)
    assert loaded.config == tiny.config
    assert not loaded.training
    input_ids = tokens(2, 12, seed=6, vocab_size=tiny.config.vocab_size)
    with torch.no_grad():
        logits = loaded(input_ids).logits
    assert_close(logits, hf_forward(hf, input_ids)[0], "logits of the loaded model")


def test_gelu_variant_mismatch_is_visible(make_model, tiny_sizes):
    """The suite can tell the GELU variants apart: exact TinyGPT != tanh GPT-2."""
    tiny = make_model(seed=3, layer_norm_eps=LAYER_NORM_EPS)
    hf = transformers.GPT2LMHeadModel(gpt2_config(tiny_sizes, "gelu_new"))
    hf.load_state_dict(tg.to_gpt2_state_dict(tiny), strict=True)
    input_ids = tokens(2, 8, seed=7, vocab_size=tiny.config.vocab_size)
    with torch.no_grad():
        logits = tiny(input_ids).logits
    hf_logits = hf_forward(hf.to(test_device()).eval(), input_ids)[0]
    assert not torch.allclose(logits, hf_logits, atol=1e-5, rtol=1e-4)


def test_gpt2_state_dict_round_trip_is_identity(pair):
    _, hf = pair
    state_dict = hf.state_dict()
    config = tg.gpt2_config_to_gpt_config(hf.config)
    round_trip = tg.to_gpt2_state_dict(tg.from_gpt2_state_dict(state_dict, config))
    assert list(round_trip) == list(state_dict)
    for name, tensor in state_dict.items():
        assert torch.equal(round_trip[name], tensor), name


def test_tinygpt_state_dict_round_trip_is_identity(pair):
    tiny, _ = pair
    state_dict = tiny.state_dict()
    round_trip = tg.from_gpt2_state_dict(tg.to_gpt2_state_dict(state_dict), tiny.config)
    assert list(round_trip) == list(state_dict)
    for name, tensor in state_dict.items():
        assert torch.equal(round_trip[name], tensor), name
    assert round_trip["lm_head.weight"] is round_trip["token_embedding.weight"]


def test_converted_tensors_own_their_memory(pair):
    tiny, hf = pair
    hf_state = hf.state_dict()
    converted = tg.from_gpt2_state_dict(hf_state, tiny.config)
    exported = tg.to_gpt2_state_dict(tiny)
    for name, tensor in converted.items():
        assert not any(shares_storage(tensor, source) for source in hf_state.values()), name
    for name, tensor in exported.items():
        assert not any(shares_storage(tensor, p) for p in tiny.parameters()), name


def test_bare_gpt2_model_keys_and_mask_buffers_convert(pair):
    """GPT2Model keys (no `transformer.`, no lm_head) plus old mask buffers, as on the hub."""
    tiny, hf = pair
    ctx = tiny.config.context_length
    bare = {
        name.removeprefix("transformer."): tensor
        for name, tensor in hf.state_dict().items()
        if name != "lm_head.weight"
    }
    for i in range(tiny.config.n_layers):
        bare[f"h.{i}.attn.bias"] = torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx)
        bare[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    converted = tg.from_gpt2_state_dict(bare, tiny.config)
    assert list(converted) == list(tiny.state_dict())
    for name, tensor in tiny.state_dict().items():
        assert torch.equal(converted[name], tensor), name


def _malformed(state_dict: dict[str, Tensor], mistake: str) -> dict[str, Tensor]:
    broken = dict(state_dict)
    if mistake == "missing":
        del broken["transformer.h.1.mlp.c_fc.bias"]
    elif mistake == "unexpected":
        broken["transformer.h.2.ln_1.weight"] = broken["transformer.h.1.ln_1.weight"]
    elif mistake == "shape":  # an nn.Linear [out, in] weight where Conv1D [in, out] belongs
        broken["transformer.h.0.mlp.c_fc.weight"] = broken["transformer.h.0.mlp.c_fc.weight"].t()
    elif mistake == "untied_head":
        broken["lm_head.weight"] = broken["lm_head.weight"] + 1.0
    elif mistake == "mixed_prefix":
        broken["ln_f.bias"] = broken.pop("transformer.ln_f.bias")
    return broken


@pytest.mark.parametrize(
    ("mistake", "named"),
    [
        ("missing", "h.1.mlp.c_fc.bias"),
        ("unexpected", "h.2.ln_1.weight"),
        ("shape", "h.0.mlp.c_fc.weight"),
        ("untied_head", "lm_head"),
        ("mixed_prefix", "ln_f.bias"),
    ],
)
def test_malformed_gpt2_state_dict_is_rejected(pair, mistake, named):
    tiny, hf = pair
    broken = _malformed(hf.state_dict(), mistake)
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        tg.from_gpt2_state_dict(broken, tiny.config)


def test_replaced_lm_head_is_not_exported_as_tied(make_model):
    tiny = make_model(seed=3)
    state_dict = dict(tiny.state_dict())
    state_dict["lm_head.weight"] = state_dict["lm_head.weight"] * 2.0
    with pytest.raises(ValueError, match="lm_head"):
        tg.to_gpt2_state_dict(state_dict)


@pytest.mark.parametrize(
    ("activation", "gelu"),
    [("gelu", "none"), ("gelu_new", "tanh"), ("gelu_pytorch_tanh", "tanh")],
)
def test_gpt2_config_converts_to_gpt_config(tiny_sizes, activation, gelu):
    hf_config = gpt2_config(tiny_sizes, activation, n_inner=None, resid_pdrop=0.1)
    with pytest.raises(ValueError, match="dropout"):  # resid 0.1 while embd and attn are 0
        tg.gpt2_config_to_gpt_config(hf_config)
    config = tg.gpt2_config_to_gpt_config(hf_config, dropout=0.0)
    expected = tg.GPTConfig(
        **{**tiny_sizes, "d_ff": 4 * tiny_sizes["d_model"]},
        layer_norm_eps=LAYER_NORM_EPS,
        gelu_approximate=gelu,
    )
    assert config == expected


def test_default_gpt2_config_is_gpt2_small():
    """transformers' defaults are GPT-2 small: tanh GELU, eps 1e-5, d_ff = 4 * 768."""
    config = tg.gpt2_config_to_gpt_config(transformers.GPT2Config())
    expected = (50257, 1024, 768, 12, 12, 3072, 0.1, 1e-5, "tanh")
    assert dataclasses.astuple(config) == expected


@pytest.mark.parametrize(
    "override",
    [
        {"activation_function": "relu"},
        {"scale_attn_weights": False},
        {"scale_attn_by_inverse_layer_idx": True},
        {"add_cross_attention": True},
        {"tie_word_embeddings": False},
    ],
    ids=lambda override: next(iter(override)),
)
def test_unsupported_gpt2_config_is_rejected(tiny_sizes, override):
    hf_config = gpt2_config(tiny_sizes, "gelu_new", **override)
    with pytest.raises(ValueError, match=next(iter(override))):
        tg.gpt2_config_to_gpt_config(hf_config)


@pytest.mark.parametrize("gelu", list(GELU_VARIANTS))
def test_gpt2_config_kwargs_build_an_equal_gpt2(make_model, gelu):
    """GPT2Config(**gpt2_config_kwargs(config)) runs the exported weights to equal logits."""
    tiny = make_model(seed=4, gelu_approximate=gelu, layer_norm_eps=LAYER_NORM_EPS)
    hf_config = transformers.GPT2Config(
        **tg.gpt2_config_kwargs(tiny.config), attn_implementation="eager"
    )
    assert tg.gpt2_config_to_gpt_config(hf_config) == tiny.config
    hf = transformers.GPT2LMHeadModel(hf_config)
    hf.load_state_dict(tg.to_gpt2_state_dict(tiny), strict=True)
    input_ids = tokens(2, 8, seed=8, vocab_size=tiny.config.vocab_size)
    with torch.no_grad():
        logits = tiny(input_ids).logits
    assert_close(logits, hf_forward(hf.to(test_device()).eval(), input_ids)[0], "logits")
