"""modern_lm: the Llama-style decoder (M02) with Llama's checkpoint names as its module paths.

Graded names (``MODERN_LM_MODULE``): ``ModernLMConfig`` and ``ModernLM``. The layers are
published for the cache-aware modern variant (``cache_aware_lm.modern``), which builds
on them instead of owning a second copy.
"""

from .attention import GroupedQueryAttention, repeat_kv
from .checkpoint import CheckpointError, atomic_load, checkpoint_problems
from .checks import (
    ArgumentTypeError,
    check_bool,
    check_features,
    check_float,
    check_probability,
    check_size,
)
from .config import ModernLMConfig
from .llama import config_from_llama, llama_config_kwargs
from .loss import IGNORE_INDEX, check_labels, shifted_cross_entropy
from .mlp import SwiGLU
from .model import DecoderLayer, ModernLM, ModernLMOutput, ModernModel, checked_positions
from .norm import RMSNorm
from .rotary import RotaryEmbedding, apply_rotary, rotate_half

__all__ = [
    "IGNORE_INDEX",
    "ArgumentTypeError",
    "CheckpointError",
    "DecoderLayer",
    "GroupedQueryAttention",
    "ModernLM",
    "ModernLMConfig",
    "ModernLMOutput",
    "ModernModel",
    "RMSNorm",
    "RotaryEmbedding",
    "SwiGLU",
    "apply_rotary",
    "atomic_load",
    "check_bool",
    "check_features",
    "check_float",
    "check_labels",
    "check_probability",
    "check_size",
    "checked_positions",
    "checkpoint_problems",
    "config_from_llama",
    "llama_config_kwargs",
    "repeat_kv",
    "rotate_half",
    "shifted_cross_entropy",
]
