"""Lossless speculative decoding for one request: greedy draft-and-verify and sampling."""

from .decode_state import DecodeState
from .generate import SpeculativeOutput, speculative_generate, speculative_sample
from .rejection import acceptance_probability, rejection_step, residual_distribution

__all__ = [
    "DecodeState",
    "SpeculativeOutput",
    "acceptance_probability",
    "rejection_step",
    "residual_distribution",
    "speculative_generate",
    "speculative_sample",
]
