"""The one error class for an argument of the wrong kind."""

from __future__ import annotations


class ArgumentTypeError(TypeError, ValueError):
    """A wrong kind of object for an argument; the message names the argument.

    A TypeError, as the error policy asks for a wrong kind, and a ValueError too: the
    mechanisms' contracts promise a ValueError for every malformed argument, so a caller
    that catches either keeps working whichever package raised it.
    """


def type_name(value: object) -> str:
    return type(value).__name__
