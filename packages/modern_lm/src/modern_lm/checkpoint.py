"""Atomic checkpoint loads: validate the whole state dict first, then copy.

torch's ``Module.load_state_dict`` copies every matching tensor and only then raises for
a missing, unexpected or misshaped key, so a rejected checkpoint leaves a half-loaded
model. ``atomic_load`` checks keys, shapes, dtypes and tied tensors against the module's
own ``state_dict()`` before torch copies anything; a rejected checkpoint leaves the
module as it was. Any model build whose checkpoint keys are its ``state_dict()`` keys
can use it::

    def load_state_dict(self, state_dict, strict=True, assign=False):
        return atomic_load(self, state_dict, strict=strict, assign=assign)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor, nn
from torch.nn.modules.module import _IncompatibleKeys

from .checks import ArgumentTypeError, check_bool


class CheckpointError(ValueError, RuntimeError):
    """A checkpoint that does not fit the module; the message names the keys.

    A ValueError (the contracts' class for a bad value) and a RuntimeError (what torch's
    own strict load raises, so callers written for torch keep working).
    """


def checkpoint_problems(
    module: nn.Module, state_dict: Mapping[str, Any], strict: bool
) -> list[str]:
    """Everything that keeps ``state_dict`` from loading into ``module``, one line each."""
    expected = module.state_dict(keep_vars=True)
    problems: list[str] = []
    if strict:
        problems += [f"missing key {key}" for key in expected if key not in state_dict]
        problems += [f"unexpected key {key}" for key in state_dict if key not in expected]
    for key, value in state_dict.items():
        if key in expected:
            problems += _tensor_problems(key, value, expected[key])
    if not problems:
        problems += _tie_problems(expected, state_dict)
    return problems


def _tensor_problems(key: str, value: object, target: Tensor) -> list[str]:
    if not isinstance(value, Tensor):
        return [f"{key} must be a Tensor, got {type(value).__name__}"]
    if value.shape != target.shape:
        return [f"{key} has shape {tuple(value.shape)}, the model's is {tuple(target.shape)}"]
    if value.dtype != target.dtype and not (
        value.is_floating_point() and target.is_floating_point()
    ):
        return [f"{key} has dtype {value.dtype}, the model's is {target.dtype}"]
    if value.is_meta and not target.is_meta:
        return [f"{key} is a meta tensor: it holds no values to copy"]
    return []


def _tie_problems(expected: Mapping[str, Tensor], state_dict: Mapping[str, Any]) -> list[str]:
    """Keys that name one shared tensor in the module must hold equal tensors."""
    groups: dict[int, list[str]] = {}
    for key, tensor in expected.items():
        groups.setdefault(id(tensor), []).append(key)
    problems = []
    for keys in groups.values():
        given = [key for key in keys if key in state_dict]
        first = given[0] if given else ""
        for key in given[1:]:
            if not state_dict[key].equal(state_dict[first].to(state_dict[key])):
                problems.append(f"tied keys {first} and {key} hold different tensors")
    return problems


def atomic_load(
    module: nn.Module, state_dict: object, *, strict: object = True, assign: object = False
) -> _IncompatibleKeys:
    """``module.load_state_dict`` that changes nothing unless the whole checkpoint fits.

    CheckpointError (a ValueError and a RuntimeError) naming every bad key; TypeError
    (also a ValueError) for a ``state_dict`` that is not a mapping or a non-bool flag.
    """
    if not isinstance(state_dict, Mapping):
        raise ArgumentTypeError(f"state_dict must be a mapping, got {type(state_dict).__name__}")
    strict, assign = check_bool("strict", strict), check_bool("assign", assign)
    problems = checkpoint_problems(module, state_dict, strict)
    if problems:
        raise CheckpointError(
            f"state_dict does not fit {type(module).__name__} (nothing was loaded): "
            + "; ".join(problems)
        )
    loaded: _IncompatibleKeys = nn.Module.load_state_dict(
        module, state_dict, strict=strict, assign=assign
    )
    return loaded


__all__ = ["CheckpointError", "atomic_load", "checkpoint_problems"]
