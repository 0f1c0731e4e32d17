"""Hugging Face Llama interop: config and state-dict mapping (transformers is not imported).

``ModernCacheAwareLM`` is a Llama-shaped decoder, so a ``LlamaForCausalLM``
checkpoint maps onto it by renaming alone:

- rotary: both rotate channel pairs ``(i, i + D/2)`` (``rotate_half`` on
  ``cat(angles, angles)``), so q/k projection rows need no permutation;
- RMSNorm in fp32 with the checkpoint's ``rms_norm_eps``; SwiGLU
  ``down(silu(gate(x)) * up(x))``; no biases anywhere;
- the head: untied here; a tied checkpoint (no ``lm_head.weight``) gets a copy
  of the embedding as its head.

Supported Llama configs are ``modern_lm.config_from_llama``'s (default rope, ``silu``,
no biases, ``head_dim == hidden_size / num_attention_heads``); anything else is a
ValueError rather than a silently different model. ``modern_lm.ModernLM`` uses Llama's
names as they are; this module renames them for the cache-aware variant's tree.
State dicts are checked whole before anything is converted: every key present once,
layers numbered 0..n-1, every tensor floating-point and shaped as the embedding and
the first layer (or, given, the config) say; the error names the key.

    config = config_from_llama(hf_model.config)
    model = ModernCacheAwareLM(config)
    model.load_state_dict(from_llama_state_dict(hf_model.state_dict(), config))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from torch import Tensor

import modern_lm
from arg_checks import check_weights, numbered_count
from tinygpt import ArgumentTypeError

from .config import ModernConfig

# Inside decoder layer i: ours "blocks.{i}.<name>" <-> Llama "model.layers.{i}.<name>".
_LAYER_NAMES = {
    "attention.q_proj.weight": "self_attn.q_proj.weight",
    "attention.k_proj.weight": "self_attn.k_proj.weight",
    "attention.v_proj.weight": "self_attn.v_proj.weight",
    "attention.out_proj.weight": "self_attn.o_proj.weight",
    "attention_norm.weight": "input_layernorm.weight",
    "mlp_norm.weight": "post_attention_layernorm.weight",
    "mlp.gate_proj.weight": "mlp.gate_proj.weight",
    "mlp.up_proj.weight": "mlp.up_proj.weight",
    "mlp.down_proj.weight": "mlp.down_proj.weight",
}
_TOP_NAMES = {
    "token_embedding.weight": "model.embed_tokens.weight",
    "final_norm.weight": "model.norm.weight",
    "lm_head.weight": "lm_head.weight",
}
# ModernConfig's field names for LlamaConfig's, for error messages.
_LLAMA_NAMES = (
    "d_model=hidden_size, n_layers=num_hidden_layers, n_heads=num_attention_heads, "
    "n_kv_heads=num_key_value_heads, d_ff=intermediate_size, "
    "context_length=max_position_embeddings"
)
_OURS_LAYER = re.compile(r"blocks\.(\d+)\.(.+)")
_LLAMA_LAYER = re.compile(r"model\.layers\.(\d+)\.(.+)")
_LLAMA_BUFFER = re.compile(r"(model\.)?(layers\.\d+\.self_attn\.)?rotary_emb\.inv_freq")


def llama_config_kwargs(config: ModernConfig) -> dict[str, object]:
    """Keyword arguments for ``transformers.LlamaConfig`` describing the same model."""
    if not isinstance(config, ModernConfig):
        raise ArgumentTypeError(f"config must be a ModernConfig, got {type(config).__name__}")
    return modern_lm.llama_config_kwargs(_as_modern_lm(config))


def config_from_llama(llama_config: object) -> ModernConfig:
    """The ``ModernConfig`` of a ``LlamaConfig`` (transformers 4.44+ or 5.x), or ValueError.

    ``modern_lm.config_from_llama`` reads and checks the Llama config (rope type, activation,
    biases, head_dim); this maps its sizes onto ModernConfig's names.
    """
    try:
        sizes = modern_lm.config_from_llama(llama_config)
        return ModernConfig(
            vocab_size=sizes.vocab_size,
            context_length=sizes.max_position_embeddings,
            d_model=sizes.hidden_size,
            n_layers=sizes.num_hidden_layers,
            n_heads=sizes.num_attention_heads,
            n_kv_heads=sizes.num_key_value_heads,
            d_ff=sizes.intermediate_size,
            rms_norm_eps=sizes.rms_norm_eps,
            rope_theta=sizes.rope_theta,
        )
    except ValueError as error:  # the configs name their own fields: say which Llama ones
        raise type(error)(
            f"llama_config does not fit a ModernConfig ({_LLAMA_NAMES}): {error}"
        ) from error


def _as_modern_lm(config: ModernConfig) -> modern_lm.ModernLMConfig:
    """The same sizes under modern_lm's (Llama's) field names; the head stays untied."""
    return modern_lm.ModernLMConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.d_model,
        num_hidden_layers=config.n_layers,
        num_attention_heads=config.n_heads,
        num_key_value_heads=config.n_kv_heads,
        head_dim=config.head_dim,
        intermediate_size=config.d_ff,
        max_position_embeddings=config.context_length,
        rope_theta=config.rope_theta,
        rms_norm_eps=config.rms_norm_eps,
    )


def from_llama_state_dict(
    state_dict: Mapping[str, Tensor], config: ModernConfig | None = None
) -> dict[str, Tensor]:
    """A ``ModernCacheAwareLM`` state dict from a ``LlamaForCausalLM`` one (tensors shared).

    Rotary ``inv_freq`` buffers are dropped (recomputed from the config); a missing
    ``lm_head.weight`` (tied checkpoint) becomes the embedding. ValueError naming the
    key for an unknown or missing name, a layer index out of order, a non-float tensor
    or a shape that disagrees with the embedding and layer 0 (with ``config``: with
    the config, layer count included); TypeError for a non-tensor.
    """
    check_weights("state_dict", state_dict)
    ours: dict[str, Tensor] = {}
    to_ours_top = {llama: own for own, llama in _TOP_NAMES.items()}
    to_ours_layer = {llama: own for own, llama in _LAYER_NAMES.items()}
    for name, tensor in state_dict.items():
        if _LLAMA_BUFFER.fullmatch(name):
            continue
        layer = _LLAMA_LAYER.fullmatch(name)
        if name in to_ours_top:
            ours[to_ours_top[name]] = tensor
        elif layer and layer.group(2) in to_ours_layer:
            ours[f"blocks.{layer.group(1)}.{to_ours_layer[layer.group(2)]}"] = tensor
        else:
            raise ValueError(f"unexpected Llama state-dict entry {name!r}")
    if "token_embedding.weight" not in ours:
        raise ValueError("the Llama state dict has no model.embed_tokens.weight")
    ours.setdefault("lm_head.weight", ours["token_embedding.weight"].clone())
    _check_model_state(ours, config, _llama_name)
    return ours


def to_llama_state_dict(
    state_dict: Mapping[str, Tensor], config: ModernConfig | None = None
) -> dict[str, Tensor]:
    """A ``LlamaForCausalLM`` state dict (untied head) from a ``ModernCacheAwareLM`` one.

    Checked as ``from_llama_state_dict`` checks, with this model's names in the errors.
    """
    check_weights("state_dict", state_dict)
    for name in state_dict:
        layer = _OURS_LAYER.fullmatch(name)
        if name not in _TOP_NAMES and not (layer and layer.group(2) in _LAYER_NAMES):
            raise ValueError(f"unexpected ModernCacheAwareLM state-dict entry {name!r}")
    _check_model_state(state_dict, config, lambda name: name)
    llama: dict[str, Tensor] = {}
    for name, tensor in state_dict.items():
        layer = _OURS_LAYER.fullmatch(name)
        if layer:
            llama[f"model.layers.{layer.group(1)}.{_LAYER_NAMES[layer.group(2)]}"] = tensor
        else:
            llama[_TOP_NAMES[name]] = tensor
    return llama


def _check_model_state(
    ours: Mapping[str, Tensor], config: ModernConfig | None, shown: Callable[[str], str]
) -> None:
    """Every expected name present with its shape; ``shown`` maps a name for the message."""
    if config is not None and not isinstance(config, ModernConfig):
        raise ArgumentTypeError(
            f"config must be a ModernConfig or None, got {type(config).__name__}"
        )
    n_layers = numbered_count(ours, _OURS_LAYER, what="the state dict", unit="layer", shown=shown)
    if config is not None and n_layers != config.n_layers:
        raise ValueError(
            f"the state dict has {n_layers} layers, config.n_layers is {config.n_layers} "
            f"(last layer key: {shown(f'blocks.{n_layers - 1}.attention.q_proj.weight')!r})"
        )
    expected = _expected_shapes(ours, config, n_layers, shown)
    for name, shape in expected.items():
        if name not in ours:
            raise ValueError(f"the state dict has no {shown(name)!r}")
        if tuple(ours[name].shape) != shape:
            raise ValueError(
                f"{shown(name)!r} has shape {tuple(ours[name].shape)}, expected {shape}"
            )


def _expected_shapes(
    ours: Mapping[str, Tensor],
    config: ModernConfig | None,
    n_layers: int,
    shown: Callable[[str], str],
) -> dict[str, tuple[int, ...]]:
    """Every name's shape, sized by the config or else by the embedding and layer 0."""
    if config is not None:
        V, C, F = config.vocab_size, config.d_model, config.d_ff
        kv = config.n_kv_heads * config.head_dim
    else:
        sizing = (
            "token_embedding.weight",
            "blocks.0.attention.k_proj.weight",
            "blocks.0.mlp.gate_proj.weight",
        )
        for name in sizing:
            if name not in ours:
                raise ValueError(f"the state dict has no {shown(name)!r}")
            if ours[name].dim() != 2:
                raise ValueError(f"{shown(name)!r} must be 2-d, got {tuple(ours[name].shape)}")
        (V, C), kv, F = ours[sizing[0]].shape, ours[sizing[1]].shape[0], ours[sizing[2]].shape[0]
    per_layer = {
        "attention.q_proj.weight": (C, C),
        "attention.k_proj.weight": (kv, C),
        "attention.v_proj.weight": (kv, C),
        "attention.out_proj.weight": (C, C),
        "attention_norm.weight": (C,),
        "mlp_norm.weight": (C,),
        "mlp.gate_proj.weight": (F, C),
        "mlp.up_proj.weight": (F, C),
        "mlp.down_proj.weight": (C, F),
    }
    assert per_layer.keys() == _LAYER_NAMES.keys()
    shapes = {"token_embedding.weight": (V, C), "final_norm.weight": (C,), "lm_head.weight": (V, C)}
    for i in range(n_layers):
        shapes.update({f"blocks.{i}.{name}": shape for name, shape in per_layer.items()})
    return shapes


def _llama_name(ours: str) -> str:
    """Our state-dict name -> the Llama name it came from (for error messages)."""
    if layer := _OURS_LAYER.fullmatch(ours):
        return f"model.layers.{layer.group(1)}.{_LAYER_NAMES[layer.group(2)]}"
    return _TOP_NAMES[ours]


__all__ = [
    "config_from_llama",
    "from_llama_state_dict",
    "llama_config_kwargs",
    "to_llama_state_dict",
]
