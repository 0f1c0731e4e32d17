"""tinygpt: a GPT-2-shaped decoder with a functional K/V cache and generation."""

from .attention import LayerKV, PastKeyValues
from .config import GPTConfig
from .errors import ArgumentTypeError
from .hf import (
    from_gpt2_state_dict,
    gpt2_config_kwargs,
    gpt2_config_to_gpt_config,
    load_gpt2,
    to_gpt2_state_dict,
)
from .model import CausalLMOutput, TinyGPT

__all__ = [
    "ArgumentTypeError",
    "CausalLMOutput",
    "GPTConfig",
    "LayerKV",
    "PastKeyValues",
    "TinyGPT",
    "from_gpt2_state_dict",
    "gpt2_config_kwargs",
    "gpt2_config_to_gpt_config",
    "load_gpt2",
    "to_gpt2_state_dict",
]
