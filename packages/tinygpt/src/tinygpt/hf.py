"""Hugging Face GPT-2 interop: `GPT2LMHeadModel` state dicts <-> TinyGPT state dicts.

Conversion works on plain state dicts, so it needs no transformers import. The two
models are the same network under different names, with two layout differences:

- GPT-2's projections are `Conv1D` modules whose weight is `[in, out]` (`y = x @ W + b`);
  `nn.Linear` stores `[out, in]`. Weights are transposed, biases copied.
- Nothing else moves: `c_attn`'s output is already `[q | k | v]`, each third split into
  heads contiguously, exactly TinyGPT's `qkv_proj` layout.

Name map (block i; `transformer.` prefix optional on the GPT-2 side):

    wte, wpe, ln_f            <-> token_embedding, position_embedding, final_norm
    h.{i}.ln_1 / ln_2         <-> blocks.{i}.attention_norm / mlp_norm
    h.{i}.attn.c_attn / c_proj <-> blocks.{i}.attention.qkv_proj / out_proj   (transposed)
    h.{i}.mlp.c_fc / c_proj   <-> blocks.{i}.mlp.up_proj / down_proj          (transposed)
    lm_head                   <-> lm_head (tied: must equal wte)

GPT-2 checkpoints use the tanh-approximate GELU ("gelu_new") and LayerNorm eps 1e-5;
`gpt2_config_to_gpt_config` carries both into `GPTConfig`, so real weights run exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import Tensor, nn

from arg_checks import check_weights, numbered_count

from .config import GPTConfig
from .errors import ArgumentTypeError, type_name
from .model import TinyGPT

# (GPT-2 module, TinyGPT module, is a Conv1D whose weight must be transposed), per block.
_BLOCK_MODULES = (
    ("ln_1", "attention_norm", False),
    ("attn.c_attn", "attention.qkv_proj", True),
    ("attn.c_proj", "attention.out_proj", True),
    ("ln_2", "mlp_norm", False),
    ("mlp.c_fc", "mlp.up_proj", True),
    ("mlp.c_proj", "mlp.down_proj", True),
)
_GPT2_PREFIX = "transformer."
# Causal-mask buffers older transformers versions saved with every block: not weights.
_GPT2_MASK_BUFFER = re.compile(r"^h\.\d+\.attn\.(bias|masked_bias)$")
_TINYGPT_BLOCK = re.compile(r"^blocks\.(\d+)\.")

# GPT2Config.activation_function -> GPTConfig.gelu_approximate. "gelu_new" (GPT-2's own)
# and "gelu_pytorch_tanh" are the same tanh approximation; "gelu" is the exact erf GELU.
_GELU_BY_ACTIVATION = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}
_ACTIVATION_BY_GELU = {"none": "gelu", "tanh": "gelu_new"}
# GPTConfig's field names for GPT2Config's, for error messages.
_GPT2_NAMES = (
    "vocab_size=vocab_size, context_length=n_positions, d_model=n_embd, n_layers=n_layer, "
    "n_heads=n_head, d_ff=n_inner, layer_norm_eps=layer_norm_epsilon"
)


def _parameter_map(n_layers: int) -> Iterator[tuple[str, str, bool]]:
    """(GPT-2 name without prefix, TinyGPT name, transpose) for every weight but lm_head."""
    yield "wte.weight", "token_embedding.weight", False
    yield "wpe.weight", "position_embedding.weight", False
    for i in range(n_layers):
        for gpt2_module, tinygpt_module, is_conv1d in _BLOCK_MODULES:
            yield f"h.{i}.{gpt2_module}.weight", f"blocks.{i}.{tinygpt_module}.weight", is_conv1d
            yield f"h.{i}.{gpt2_module}.bias", f"blocks.{i}.{tinygpt_module}.bias", False
    yield "ln_f.weight", "final_norm.weight", False
    yield "ln_f.bias", "final_norm.bias", False


def _gpt2_shapes(
    vocab_size: int, context_length: int, d_model: int, d_ff: int, n_layers: int
) -> dict[str, tuple[int, ...]]:
    """Expected GPT-2 tensor shapes (Conv1D weights [in, out]) for these sizes."""
    C, F = d_model, d_ff
    per_block = {
        "ln_1.weight": (C,),
        "ln_1.bias": (C,),
        "attn.c_attn.weight": (C, 3 * C),
        "attn.c_attn.bias": (3 * C,),
        "attn.c_proj.weight": (C, C),
        "attn.c_proj.bias": (C,),
        "ln_2.weight": (C,),
        "ln_2.bias": (C,),
        "mlp.c_fc.weight": (C, F),
        "mlp.c_fc.bias": (F,),
        "mlp.c_proj.weight": (F, C),
        "mlp.c_proj.bias": (C,),
    }
    shapes = {
        "wte.weight": (vocab_size, C),
        "wpe.weight": (context_length, C),
        "ln_f.weight": (C,),
        "ln_f.bias": (C,),
    }
    for i in range(n_layers):
        shapes.update({f"h.{i}.{name}": shape for name, shape in per_block.items()})
    return shapes


def _tinygpt_shapes(
    body: Mapping[str, Tensor], mapping: list[tuple[str, str, bool]], n_layers: int
) -> dict[str, tuple[int, ...]]:
    """Expected TinyGPT shapes, sized by the embeddings and the first MLP (checked 2-d first)."""
    two_d = ("token_embedding.weight", "position_embedding.weight", "blocks.0.mlp.up_proj.weight")
    for name in two_d:
        if body[name].dim() != 2:
            raise ValueError(
                f"TinyGPT state dict {name!r} must be 2-d, got shape {tuple(body[name].shape)}"
            )
    (V, C), ctx, F = body[two_d[0]].shape, body[two_d[1]].shape[0], body[two_d[2]].shape[0]
    gpt2 = _gpt2_shapes(V, ctx, C, F, n_layers)
    return {
        tinygpt: gpt2[name][::-1] if transpose else gpt2[name]
        for name, tinygpt, transpose in mapping
    }


def _copy(tensor: Tensor, transpose: bool) -> Tensor:
    """A detached copy that owns its memory (never a view of the caller's tensor)."""
    tensor = tensor.detach()
    return (tensor.t() if transpose else tensor).clone(memory_format=torch.contiguous_format)


def _check_key_sets(present: set[str], expected: set[str], what: str) -> None:
    missing, unexpected = sorted(expected - present), sorted(present - expected)
    if missing or unexpected:
        raise ValueError(
            f"{what} does not match the model: missing {missing[:6]}"
            f"{' ...' if len(missing) > 6 else ''}, unexpected {unexpected[:6]}"
            f"{' ...' if len(unexpected) > 6 else ''}"
        )


def _check_shapes(
    state_dict: Mapping[str, Tensor], shapes: Mapping[str, tuple[int, ...]], what: str
) -> None:
    for name, shape in shapes.items():
        if tuple(state_dict[name].shape) != shape:
            raise ValueError(
                f"{what} {name!r} has shape {tuple(state_dict[name].shape)}, expected {shape}"
            )


def _check_tied(
    head: Tensor | None, embedding: Tensor, head_name: str, embedding_name: str
) -> None:
    """TinyGPT ties its LM head to the token embedding, so an untied head cannot convert."""
    if head is not None and not (head.shape == embedding.shape and torch.equal(head, embedding)):
        raise ValueError(
            f"{head_name} differs from {embedding_name}: TinyGPT ties the LM head to the "
            "token embedding, so an untied checkpoint cannot be converted"
        )


def _strip_gpt2_prefix(state_dict: Mapping[str, Tensor]) -> tuple[dict[str, Tensor], Tensor | None]:
    """(weights keyed without `transformer.` and without mask buffers, lm_head or None).

    Takes GPT2LMHeadModel keys (`transformer.*`, `lm_head.weight`) or bare GPT2Model keys.
    """
    body = {name: value for name, value in state_dict.items() if name != "lm_head.weight"}
    prefixed = [name.startswith(_GPT2_PREFIX) for name in body]
    if any(prefixed) and not all(prefixed):
        bare = sorted(name for name in body if not name.startswith(_GPT2_PREFIX))
        raise ValueError(
            f"GPT-2 state dict mixes 'transformer.'-prefixed keys with bare keys {bare[:6]}"
        )
    if any(prefixed):
        body = {name.removeprefix(_GPT2_PREFIX): value for name, value in body.items()}
    body = {name: value for name, value in body.items() if not _GPT2_MASK_BUFFER.match(name)}
    return body, state_dict.get("lm_head.weight")


def from_gpt2_state_dict(state_dict: Mapping[str, Tensor], config: GPTConfig) -> dict[str, Tensor]:
    """A GPT-2 state dict -> a TinyGPT state dict for ``config`` (strict-loadable).

    Accepts `GPT2LMHeadModel` keys (`transformer.*`, `lm_head.weight`) or bare `GPT2Model`
    keys (as in the original hub checkpoints); drops the `attn.bias` / `attn.masked_bias`
    mask buffers older versions saved. Conv1D weights are transposed; every returned
    tensor is a new copy in the source dtype and device, with `lm_head.weight` the same
    tensor as `token_embedding.weight`. ValueError for missing, unexpected or misshapen
    keys, non-tensors, or an `lm_head.weight` that differs from `wte.weight`.
    """
    if not isinstance(config, GPTConfig):
        raise ArgumentTypeError(f"config must be a GPTConfig, got {type_name(config)}")
    body, head = _strip_gpt2_prefix(check_weights("state_dict", state_dict))
    shapes = _gpt2_shapes(
        config.vocab_size, config.context_length, config.d_model, config.d_ff, config.n_layers
    )
    _check_key_sets(set(body), set(shapes), "GPT-2 state dict")
    _check_shapes(body, shapes, "GPT-2 state dict")
    _check_tied(head, body["wte.weight"], "lm_head.weight", "wte.weight")

    converted = {
        tinygpt_name: _copy(body[gpt2_name], transpose)
        for gpt2_name, tinygpt_name, transpose in _parameter_map(config.n_layers)
    }
    converted["lm_head.weight"] = converted["token_embedding.weight"]  # one tensor, tied
    return converted


def to_gpt2_state_dict(model_or_state_dict: nn.Module | Mapping[str, Tensor]) -> dict[str, Tensor]:
    """A TinyGPT (or its state dict) -> a `GPT2LMHeadModel` state dict (strict-loadable).

    Keys are `transformer.*` plus `lm_head.weight` (the same tensor as
    `transformer.wte.weight`); Linear weights are transposed to Conv1D `[in, out]`;
    every tensor is a new copy. ValueError for missing or unexpected keys, non-tensors,
    or an `lm_head.weight` that is not the token embedding (GPT-2 ties them).
    Build the matching model with `GPT2Config(**gpt2_config_kwargs(model.config))`.
    """
    if isinstance(model_or_state_dict, nn.Module):
        model_or_state_dict = model_or_state_dict.state_dict()
    elif not isinstance(model_or_state_dict, Mapping):
        raise ArgumentTypeError(
            "model_or_state_dict must be a TinyGPT or its state dict, got "
            f"{type_name(model_or_state_dict)}"
        )
    state_dict = check_weights("model_or_state_dict", model_or_state_dict)
    body = {name: value for name, value in state_dict.items() if name != "lm_head.weight"}
    n_layers = numbered_count(body, _TINYGPT_BLOCK, what="TinyGPT state dict", unit="block")
    mapping = list(_parameter_map(n_layers))
    _check_key_sets(set(body), {tinygpt for _, tinygpt, _ in mapping}, "TinyGPT state dict")
    _check_shapes(body, _tinygpt_shapes(body, mapping, n_layers), "TinyGPT state dict")
    embedding = body["token_embedding.weight"]
    _check_tied(
        state_dict.get("lm_head.weight"), embedding, "lm_head.weight", "token_embedding.weight"
    )

    converted = {
        _GPT2_PREFIX + gpt2_name: _copy(body[tinygpt_name], transpose)
        for gpt2_name, tinygpt_name, transpose in mapping
    }
    converted["lm_head.weight"] = converted[_GPT2_PREFIX + "wte.weight"]  # one tensor, tied
    return converted


def _read(hf_config: object, name: str) -> Any:
    """One GPT2Config attribute, passed on unchecked: GPTConfig validates the values."""
    if not hasattr(hf_config, name):
        raise ArgumentTypeError(
            f"hf_config ({type_name(hf_config)}) has no {name!r}: expected a GPT2Config"
        )
    return getattr(hf_config, name)


def gpt2_config_to_gpt_config(hf_config: object, *, dropout: float | None = None) -> GPTConfig:
    """A transformers `GPT2Config` (read by attribute, no import) -> `GPTConfig`.

    `n_inner=None` means `4 * n_embd`; `activation_function` "gelu_new" or
    "gelu_pytorch_tanh" -> `gelu_approximate="tanh"`, "gelu" -> "none". `dropout`
    defaults to GPT-2's shared `resid_pdrop = embd_pdrop = attn_pdrop` (pass it when
    they differ). ValueError for what TinyGPT cannot express: another activation,
    unscaled or layer-scaled attention, cross-attention, an untied LM head.
    """
    activation = _read(hf_config, "activation_function")
    if not isinstance(activation, str) or activation not in _GELU_BY_ACTIVATION:
        raise ValueError(
            f"activation_function {activation!r} is not supported: expected one of "
            f"{sorted(_GELU_BY_ACTIVATION)}"
        )
    unsupported = {
        "scale_attn_weights": (True, "TinyGPT always scales attention by 1/sqrt(head_dim)"),
        "scale_attn_by_inverse_layer_idx": (False, "TinyGPT has no per-layer attention scale"),
        "add_cross_attention": (False, "TinyGPT is decoder-only"),
        "tie_word_embeddings": (True, "TinyGPT ties the LM head to the token embedding"),
    }
    for name, (required, why) in unsupported.items():
        if bool(getattr(hf_config, name, required)) != required:
            raise ValueError(f"{name}={not required} is not supported: {why}")
    if dropout is None:
        rates = {
            name: _read(hf_config, name) for name in ("resid_pdrop", "embd_pdrop", "attn_pdrop")
        }
        if any(rate != rates["resid_pdrop"] for rate in rates.values()):
            raise ValueError(f"GPT-2 dropout rates differ {rates}: pass dropout= explicitly")
        dropout = rates["resid_pdrop"]
    n_embd, n_inner = _read(hf_config, "n_embd"), _read(hf_config, "n_inner")
    if n_inner is None and isinstance(n_embd, int):
        n_inner = 4 * n_embd
    try:
        return GPTConfig(
            vocab_size=_read(hf_config, "vocab_size"),
            context_length=_read(hf_config, "n_positions"),
            d_model=n_embd,
            n_layers=_read(hf_config, "n_layer"),
            n_heads=_read(hf_config, "n_head"),
            d_ff=n_inner,
            dropout=dropout,
            layer_norm_eps=_read(hf_config, "layer_norm_epsilon"),
            gelu_approximate=_GELU_BY_ACTIVATION[activation],
        )
    except ValueError as error:  # GPTConfig names its own fields: say which GPT-2 ones they are
        raise type(error)(
            f"hf_config does not describe a TinyGPT ({_GPT2_NAMES}): {error}"
        ) from error


def gpt2_config_kwargs(config: GPTConfig) -> dict[str, object]:
    """`GPTConfig` -> keyword arguments for transformers' `GPT2Config(**kwargs)`."""
    if not isinstance(config, GPTConfig):
        raise ArgumentTypeError(f"config must be a GPTConfig, got {type_name(config)}")
    return {
        "vocab_size": config.vocab_size,
        "n_positions": config.context_length,
        "n_embd": config.d_model,
        "n_layer": config.n_layers,
        "n_head": config.n_heads,
        "n_inner": config.d_ff,
        "activation_function": _ACTIVATION_BY_GELU[config.gelu_approximate],
        "layer_norm_epsilon": config.layer_norm_eps,
        "resid_pdrop": config.dropout,
        "embd_pdrop": config.dropout,
        "attn_pdrop": config.dropout,
        "tie_word_embeddings": True,
    }


def load_gpt2(hf_model: nn.Module) -> TinyGPT:
    """A transformers `GPT2LMHeadModel` (or `GPT2Model`) -> an equal TinyGPT.

    Same weights (copied), dtype, device and train/eval mode as ``hf_model``.
    """
    hf_config = getattr(hf_model, "config", None)
    if not isinstance(hf_model, nn.Module) or hf_config is None:
        raise ArgumentTypeError(
            f"hf_model must be a transformers GPT-2 model, got {type_name(hf_model)}"
        )
    config = gpt2_config_to_gpt_config(hf_config)
    state_dict = from_gpt2_state_dict(hf_model.state_dict(), config)
    embedding = state_dict["token_embedding.weight"]
    model = TinyGPT(config).to(device=embedding.device, dtype=embedding.dtype)
    model.load_state_dict(state_dict, strict=True)
    return model.train(hf_model.training)


__all__ = [
    "from_gpt2_state_dict",
    "gpt2_config_kwargs",
    "gpt2_config_to_gpt_config",
    "load_gpt2",
    "to_gpt2_state_dict",
]
