"""The error for an argument of the wrong kind (a list for a tensor, a dict for a config)."""

from __future__ import annotations


class ArgumentTypeError(TypeError, ValueError):
    """A wrong kind of object for an argument; the message names the argument.

    It is a TypeError, and a ValueError too: the contract promises ValueError for
    every malformed argument, so code that catches ValueError keeps working.
    """


def type_name(value: object) -> str:
    return type(value).__name__


__all__ = ["ArgumentTypeError", "type_name"]
