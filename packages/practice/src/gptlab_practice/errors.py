"""The two ways a command stops short of its work, raised by the domain and told by the
command line (one line on stderr): a refusal (exit status 1) and bad arguments (2)."""

from __future__ import annotations


class RefusedError(Exception):
    """A command that cannot go ahead (one line, exit status 1)."""


class UsageError(Exception):
    """Bad arguments (exit status 2)."""
