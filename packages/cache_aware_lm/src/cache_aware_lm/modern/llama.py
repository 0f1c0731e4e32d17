"""Hugging Face Llama interop: config and state-dict mapping (transformers is not imported).

``ModernCacheAwareLM`` is a Llama-shaped decoder, so a ``LlamaForCausalLM``
checkpoint maps onto it by renaming alone:

- rotary: both rotate channel pairs ``(i, i + D/2)`` (``rotate_half`` on
  ``cat(angles, angles)``), so q/k projection rows need no permutation;
- RMSNorm in fp32 with the checkpoint's ``rms_norm_eps``; SwiGLU
  ``down(silu(gate(x)) * up(x))``; no biases anywhere;
- the head: untied here; a tied checkpoint (no ``lm_head.weight``) gets a copy
  of the embedding as its head.

Supported Llama configs: default rope (no scaling), ``silu``, no attention or
MLP bias, ``head_dim == hidden_size / num_attention_heads``; anything else is a
ValueError rather than a silently different model.

    model = ModernCacheAwareLM(config_from_llama(hf_model.config))
    model.load_state_dict(from_llama_state_dict(hf_model.state_dict()))
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from torch import Tensor

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
_OURS_LAYER = re.compile(r"blocks\.(\d+)\.(.+)")
_LLAMA_LAYER = re.compile(r"model\.layers\.(\d+)\.(.+)")
_LLAMA_BUFFER = re.compile(r"(model\.)?(layers\.\d+\.self_attn\.)?rotary_emb\.inv_freq")


def llama_config_kwargs(config: ModernConfig) -> dict[str, object]:
    """Keyword arguments for ``transformers.LlamaConfig`` describing the same model."""
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": config.d_model,
        "intermediate_size": config.d_ff,
        "num_hidden_layers": config.n_layers,
        "num_attention_heads": config.n_heads,
        "num_key_value_heads": config.n_kv_heads,
        "max_position_embeddings": config.context_length,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
    }


def config_from_llama(llama_config: object) -> ModernConfig:
    """The ``ModernConfig`` of a ``LlamaConfig`` (transformers 4.44+ or 5.x), or ValueError."""
    hidden, heads = _int(llama_config, "hidden_size"), _int(llama_config, "num_attention_heads")
    head_dim = getattr(llama_config, "head_dim", None)
    if head_dim is not None and head_dim * heads != hidden:
        raise ValueError(f"head_dim {head_dim} != hidden_size / num_attention_heads is unsupported")
    activation = getattr(llama_config, "hidden_act", None)
    if activation != "silu":
        raise ValueError(f"hidden_act {activation!r} is unsupported (SwiGLU uses silu)")
    for flag in ("attention_bias", "mlp_bias"):
        if getattr(llama_config, flag, False):
            raise ValueError(f"{flag}=True is unsupported: the modern variant has no biases")
    kv_heads = getattr(llama_config, "num_key_value_heads", None)
    return ModernConfig(
        vocab_size=_int(llama_config, "vocab_size"),
        context_length=_int(llama_config, "max_position_embeddings"),
        d_model=hidden,
        n_layers=_int(llama_config, "num_hidden_layers"),
        n_heads=heads,
        n_kv_heads=heads if kv_heads is None else int(kv_heads),
        d_ff=_int(llama_config, "intermediate_size"),
        rms_norm_eps=float(getattr(llama_config, "rms_norm_eps", 1e-6)),
        rope_theta=_rope_theta(llama_config),
    )


def from_llama_state_dict(state_dict: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """A ``ModernCacheAwareLM`` state dict from a ``LlamaForCausalLM`` one (tensors shared).

    Rotary ``inv_freq`` buffers are dropped (recomputed from the config); a missing
    ``lm_head.weight`` (tied checkpoint) becomes the embedding; any other unknown
    name is a ValueError.
    """
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
    return ours


def to_llama_state_dict(state_dict: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """A ``LlamaForCausalLM`` state dict (untied head) from a ``ModernCacheAwareLM`` one."""
    llama: dict[str, Tensor] = {}
    for name, tensor in state_dict.items():
        layer = _OURS_LAYER.fullmatch(name)
        if name in _TOP_NAMES:
            llama[_TOP_NAMES[name]] = tensor
        elif layer and layer.group(2) in _LAYER_NAMES:
            llama[f"model.layers.{layer.group(1)}.{_LAYER_NAMES[layer.group(2)]}"] = tensor
        else:
            raise ValueError(f"unexpected ModernCacheAwareLM state-dict entry {name!r}")
    return llama


def _int(config: object, name: str) -> int:
    value = getattr(config, name, None)
    if not isinstance(value, int):
        raise ValueError(f"the Llama config's {name} must be an int, got {value!r}")
    return value


def _rope_theta(llama_config: object) -> float:
    """Base of the default rope; scaled variants (llama3, yarn, ...) are rejected.

    transformers 5 keeps it in ``rope_parameters``; 4.x in ``rope_theta`` with an
    optional ``rope_scaling`` dict.
    """
    parameters = getattr(llama_config, "rope_parameters", None)
    if not isinstance(parameters, Mapping):
        parameters = getattr(llama_config, "rope_scaling", None) or {}
    assert isinstance(parameters, Mapping)
    rope_type = parameters.get("rope_type", parameters.get("type", "default"))
    if rope_type != "default":
        raise ValueError(f"rope type {rope_type!r} is unsupported (only the default rope)")
    theta = parameters.get("rope_theta", getattr(llama_config, "rope_theta", None))
    if theta is None:
        raise ValueError("the Llama config has no rope_theta")
    return float(theta)


__all__ = [
    "config_from_llama",
    "from_llama_state_dict",
    "llama_config_kwargs",
    "to_llama_state_dict",
]
