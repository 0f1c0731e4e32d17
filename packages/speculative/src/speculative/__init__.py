"""Lossless speculative decoding for one request: greedy draft-and-verify and sampling."""

from .compiled import CompiledSpeculativeDecoder
from .decode_state import DecodeState
from .generate import SpeculativeOutput, speculative_generate, speculative_sample
from .rejection import acceptance_probability, rejection_step, residual_distribution
from .serving import ServingState, serve_speculative_generate

__all__ = [
    "CompiledSpeculativeDecoder",
    "DecodeState",
    "ServingState",
    "SpeculativeOutput",
    "acceptance_probability",
    "rejection_step",
    "residual_distribution",
    "serve_speculative_generate",
    "speculative_generate",
    "speculative_sample",
]
