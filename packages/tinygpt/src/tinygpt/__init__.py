"""tinygpt: a GPT-2-shaped decoder with a functional K/V cache and generation."""

from .attention import LayerKV, PastKeyValues
from .config import GPTConfig
from .model import CausalLMOutput, TinyGPT

__all__ = ["CausalLMOutput", "GPTConfig", "LayerKV", "PastKeyValues", "TinyGPT"]
