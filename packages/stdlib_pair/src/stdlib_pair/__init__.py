"""A trained byte-level target and draft on Python's standard library, and a live demo."""

from .corpus import SEPARATOR, VOCAB_SIZE, decode, encode
from .weights import CONFIGS, card, load_model

__all__ = ["CONFIGS", "SEPARATOR", "VOCAB_SIZE", "card", "decode", "encode", "load_model"]
