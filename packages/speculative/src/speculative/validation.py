"""Argument checks shared by the decode loop, DecodeState and the rejection rule.

A wrong kind of object is a TypeError, a wrong value, shape, dtype or device a
ValueError; each message names the argument. All of them run before any state
changes. The decode loop itself checks nothing per round: these run once per call.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

INT64_MAX = 2**63 - 1


def check_int(name: str, value: object, minimum: int) -> int:
    # bool is an int subclass; True must not pass as 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_callable(name: str, value: object) -> None:
    """A callable model, not one on ``meta`` (named as the problem, not a device mismatch)."""
    if not callable(value):
        raise TypeError(f"{name} must be a callable cache-aware model, got {type(value).__name__}")
    parameters = getattr(value, "parameters", None)
    if callable(parameters):
        first = next(iter(parameters()), None)
        if isinstance(first, Tensor) and first.device.type == "meta":
            raise ValueError(f"{name} is on device meta: it has no weights to run")


def check_long_tensor(name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype != torch.long:
        raise ValueError(f"{name} must be torch.long, got {value.dtype}")
    return value


def check_request(
    target: object,
    draft: object,
    input_ids: object,
    positions: object,
    max_new_tokens: object,
    num_speculative_tokens: object,
    eos_token_id: object,
) -> tuple[list[int], list[int]]:
    """Everything checkable without the models; returns the prompt and its positions.

    Both rows are read in one host sync and compared as Python integers, so every
    column is checked and nothing wraps around.
    """
    check_callable("target", target)
    check_callable("draft", draft)
    ids = check_long_tensor("input_ids", input_ids)
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"input_ids must be [1, T] with T >= 1, got {tuple(ids.shape)}")
    if ids.shape[0] != 1:
        raise ValueError(
            f"input_ids: speculative decoding supports batch size 1, got {ids.shape[0]}"
        )
    where = check_long_tensor("positions", positions)
    if where.shape != ids.shape:
        raise ValueError(f"positions {tuple(where.shape)} must match input_ids {tuple(ids.shape)}")
    if where.device != ids.device:
        raise ValueError(f"positions are on {where.device}, input_ids on {ids.device}")
    budget = check_int("max_new_tokens", max_new_tokens, 0)
    check_int("num_speculative_tokens", num_speculative_tokens, 1)
    if eos_token_id is not None:
        check_int("eos_token_id", eos_token_id, 0)
    prompt, row = torch.stack([ids[0], where[0]]).tolist()
    if min(prompt) < 0:
        raise ValueError(f"input_ids must be non-negative token ids, got {prompt}")
    start = row[0]
    if start < 0 or row != list(range(start, start + len(row))):
        raise ValueError(f"positions must be non-negative and step 1, got {row}")
    if row[-1] + budget > INT64_MAX:
        raise ValueError(
            f"max_new_tokens={budget} after positions ending at {row[-1]} passes the largest "
            "int64 position"
        )
    return prompt, row


def check_temperature(temperature: object) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise TypeError(f"temperature must be a float, got {type(temperature).__name__}")
    if not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {temperature}")
    return float(temperature)


def check_generator(generator: object, device: torch.device) -> None:
    if generator is None:
        return
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    if generator.device.type != device.type:
        raise ValueError(f"generator is on {generator.device}, the tensors on {device}")


# A float32 softmax over a large vocabulary sums to 1 within about 1e-6; a mass off
# by more than this (or than a few roundings of a half-precision dtype) is not a
# distribution.
MASS_TOLERANCE = 1e-3


def _check_distribution(name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise ValueError(f"{name} must be a floating-point distribution, got {value.dtype}")
    if value.dim() != 1 or value.shape[0] == 0:
        raise ValueError(f"{name} must be a [V] distribution, V >= 1, got {tuple(value.shape)}")
    return value


def check_distributions(p: object, q: object) -> tuple[Tensor, Tensor]:
    """p and q: [V] floating tensors on one device, finite, >= 0, each summing to 1."""
    p_, q_ = _check_distribution("p", p), _check_distribution("q", q)
    if q_.shape != p_.shape:
        raise ValueError(f"q has {q_.shape[0]} entries, p has {p_.shape[0]}")
    if q_.device != p_.device:
        raise ValueError(f"q is on {q_.device}, p on {p_.device}")
    # One host sync for both: a NaN or inf makes the sum non-finite, a negative the min.
    reductions = (p_.sum(), p_.min(), q_.sum(), q_.min())
    summary = torch.stack([value.float() for value in reductions]).tolist()
    for name, value, (total, smallest) in (("p", p_, summary[:2]), ("q", q_, summary[2:])):
        tolerance = max(MASS_TOLERANCE, 4 * torch.finfo(value.dtype).eps)
        if not (smallest >= 0.0 and abs(total - 1.0) <= tolerance):
            raise ValueError(
                f"{name} must be finite, non-negative and sum to 1, got sum {total}, min {smallest}"
            )
    return p_, q_


def check_token(token: object, vocabulary: int) -> int:
    index = check_int("token", token, 0)
    if index >= vocabulary:
        raise ValueError(f"token must lie in [0, {vocabulary}), got {index}")
    return index
