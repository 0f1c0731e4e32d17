"""The error for an argument of the wrong kind (a list for a tensor, a dict for a config).

It is `arg_checks`' one class, shared by every package that checks arguments: a
TypeError, and a ValueError too, since the contract promises ValueError for every
malformed argument, so code that catches ValueError keeps working.
"""

from __future__ import annotations

from arg_checks import ArgumentTypeError, type_name

__all__ = ["ArgumentTypeError", "type_name"]
