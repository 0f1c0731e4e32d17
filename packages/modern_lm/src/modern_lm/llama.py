"""Hugging Face Llama interop (transformers is never imported here).

``ModernLM``'s module paths *are* ``LlamaForCausalLM``'s checkpoint names, and both
rotate channel pairs (i, i + D/2), so a Llama state dict loads with
``load_state_dict(strict=True)`` as it is; only the config needs mapping. Supported
Llama configs: default rope (no scaling), ``silu``, no attention or MLP bias,
``head_dim * num_attention_heads == hidden_size``; anything else is a ValueError
rather than a silently different model.

    model = ModernLM(config_from_llama(hf_model.config))
    model.load_state_dict(hf_model.state_dict(), strict=True)
"""

from __future__ import annotations

from collections.abc import Mapping

from .checks import ArgumentTypeError, check_size
from .config import ModernLMConfig


def llama_config_kwargs(config: ModernLMConfig) -> dict[str, object]:
    """Keyword arguments for ``transformers.LlamaConfig`` describing the same model."""
    if not isinstance(config, ModernLMConfig):
        raise ArgumentTypeError(f"config must be a ModernLMConfig, got {type(config).__name__}")
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": config.num_key_value_heads,
        "head_dim": config.head_dim,
        "max_position_embeddings": config.max_position_embeddings,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "attention_dropout": config.dropout,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": config.tie_word_embeddings,
    }


def config_from_llama(llama_config: object) -> ModernLMConfig:
    """The ``ModernLMConfig`` of a ``LlamaConfig`` (transformers 4.44+ or 5.x), or ValueError."""
    if not hasattr(llama_config, "hidden_size"):
        raise ArgumentTypeError(
            f"llama_config must be a LlamaConfig, got {type(llama_config).__name__}"
        )
    activation = getattr(llama_config, "hidden_act", None)
    if activation != "silu":
        raise ValueError(f"hidden_act {activation!r} is unsupported (SwiGLU uses silu)")
    for flag in ("attention_bias", "mlp_bias"):
        if getattr(llama_config, flag, False):
            raise ValueError(f"{flag}=True is unsupported: the projections have no biases")
    hidden, heads = _int(llama_config, "hidden_size"), _int(llama_config, "num_attention_heads")
    check_size("num_attention_heads", heads)  # divides hidden_size when head_dim is absent
    head_dim = getattr(llama_config, "head_dim", None)
    kv_heads = getattr(llama_config, "num_key_value_heads", None)
    return ModernLMConfig(
        vocab_size=_int(llama_config, "vocab_size"),
        hidden_size=hidden,
        num_hidden_layers=_int(llama_config, "num_hidden_layers"),
        num_attention_heads=heads,
        num_key_value_heads=heads
        if kv_heads is None
        else _int(llama_config, "num_key_value_heads"),
        head_dim=hidden // heads if head_dim is None else _int(llama_config, "head_dim"),
        intermediate_size=_int(llama_config, "intermediate_size"),
        max_position_embeddings=_int(llama_config, "max_position_embeddings"),
        rope_theta=_rope_theta(llama_config),
        rms_norm_eps=getattr(llama_config, "rms_norm_eps", 1e-6),
        dropout=getattr(llama_config, "attention_dropout", 0.0),
        tie_word_embeddings=getattr(llama_config, "tie_word_embeddings", False),
    )


def _int(config: object, name: str) -> int:
    value = getattr(config, name, None)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"the Llama config's {name} must be an int, got {value!r}")
    return value


def _rope_theta(llama_config: object) -> float:
    """Base of the default rope; scaled variants (llama3, yarn, ...) are rejected.

    transformers 5 keeps it in ``rope_parameters``; 4.x in ``rope_theta`` with an
    optional ``rope_scaling`` dict.
    """
    parameters = getattr(llama_config, "rope_parameters", None)
    if not isinstance(parameters, Mapping):
        parameters = getattr(llama_config, "rope_scaling", None) or {}
    if not isinstance(parameters, Mapping):
        raise ArgumentTypeError(f"rope_scaling must be a dict or None, got {parameters!r}")
    rope_type = parameters.get("rope_type", parameters.get("type", "default"))
    if rope_type != "default":
        raise ValueError(f"rope type {rope_type!r} is unsupported (only the default rope)")
    theta = parameters.get("rope_theta", getattr(llama_config, "rope_theta", None))
    if theta is None:
        raise ValueError("the Llama config has no rope_theta")
    if isinstance(theta, bool) or not isinstance(theta, int | float):
        raise ArgumentTypeError(f"rope_theta must be a float, got {theta!r}")
    return float(theta)


__all__ = ["config_from_llama", "llama_config_kwargs"]
