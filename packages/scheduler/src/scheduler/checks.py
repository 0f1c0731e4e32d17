"""Argument checks: every public call is validated before any state changes.

A wrong kind is a TypeError, a wrong value a ValueError; both name the argument.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Hashable, Sequence

from torch import Tensor


def positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def non_negative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def request_id(value: object) -> str | int:
    """Request ids are str or int (not bool): hashable, printable, never a tensor."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"request_id must be a str or an int, got {type(value).__name__}")
    return value


def lookup_id(value: object) -> Hashable:
    """An id to look up (status, abort_request; the engine's own ids are tuples): a list
    or a dict is refused naming the argument, not failed on with "unhashable type"."""
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"request_id must be a str or an int, got {type(value).__name__}") from None
    return value


def token_ids(name: str, tokens: object, vocab_size: int) -> list[int]:
    """A non-empty sequence of ints (or ``[T]`` / ``[1, T]`` integer tensor) in the vocabulary."""
    if isinstance(tokens, Tensor):
        if tokens.device.type == "meta":
            raise ValueError(f"{name} is a meta tensor: it holds no token ids")
        if tokens.dim() == 2 and tokens.shape[0] == 1:
            tokens = tokens[0]
        if tokens.dim() != 1 or tokens.dtype.is_floating_point or tokens.is_complex():
            raise TypeError(f"{name} must be a [T] or [1, T] integer tensor")
        tokens = tokens.tolist()
    if not isinstance(tokens, Sequence) or isinstance(tokens, str | bytes):
        raise TypeError(f"{name} must be a sequence of ints, got {type(tokens).__name__}")
    ids: list[int] = []
    for index, token in enumerate(tokens):
        if isinstance(token, bool):
            raise TypeError(f"{name}[{index}] is a bool, not a token id")
        try:
            ids.append(operator.index(token))
        except TypeError:
            raise TypeError(f"{name}[{index}] must be an int, got {type(token).__name__}") from None
    if not ids:
        raise ValueError(f"{name} must hold at least one token")
    for index, token in enumerate(ids):
        if not 0 <= token < vocab_size:
            raise ValueError(
                f"{name}[{index}] = {token} is outside the vocabulary [0, {vocab_size})"
            )
    return ids


def optional_token(name: str, value: object, vocab_size: int) -> int | None:
    if value is None:
        return None
    token = non_negative_int(name, value)
    if token >= vocab_size:
        raise ValueError(f"{name} = {token} is outside the vocabulary [0, {vocab_size})")
    return token


# Below this a temperature is greedy, as serving engines do (vLLM's _SAMPLING_EPS):
# logits / 1e-45 overflow to inf and softmax gives NaN, while the limit T -> 0 of the
# distribution is the argmax anyway. Such a request draws nothing from its generator.
GREEDY_BELOW = 1e-5


def temperature(value: object) -> float:
    """A finite float >= 0; one below ``GREEDY_BELOW`` is 0.0 (greedy)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"temperature must be a float, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"temperature must be finite and >= 0, got {value}")
    return 0.0 if value < GREEDY_BELOW else float(value)


def seed(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"seed must be an int, got {type(value).__name__}")
    if not 0 <= value < 2**63:
        raise ValueError(f"seed must lie in [0, 2**63), got {value}")
    return value


def batch_rows(request_ids: Sequence[object], rows: Sequence[tuple[list[int], int]]) -> None:
    """One (new tokens, first position) row per request id, at least one row, none empty."""
    if not rows:
        raise ValueError("rows must hold at least one (tokens, first position) row")
    if len(request_ids) != len(rows):
        raise ValueError(
            f"request_ids must name one request per row: {len(request_ids)} ids, {len(rows)} rows"
        )
    for index, (tokens, _) in enumerate(rows):
        if not tokens:
            raise ValueError(f"rows[{index}] must bring at least one token")
