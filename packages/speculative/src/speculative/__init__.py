"""Lossless speculative decoding for one request: greedy draft-and-verify and sampling."""

from .decode_state import DecodeState
from .generate import SpeculativeOutput, speculative_generate, speculative_sample
from .model_protocol import CacheAwareModel, CacheAwareOutput, LayerKV, PastKeyValues
from .rejection import acceptance_probability, rejection_step, residual_distribution

__all__ = [
    "CacheAwareModel",
    "CacheAwareOutput",
    "DecodeState",
    "LayerKV",
    "PastKeyValues",
    "SpeculativeOutput",
    "acceptance_probability",
    "rejection_step",
    "residual_distribution",
    "speculative_generate",
    "speculative_sample",
]
