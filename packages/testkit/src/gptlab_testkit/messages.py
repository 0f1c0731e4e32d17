"""What a contract test may require of an error message (docs/contracts.md, Conventions).

A "ValueError" of the contracts names what is wrong: the argument, by its parameter
name written with underscores or spaces (`request_id`, `request id`), or the
offending value (`'zzz'`, `torch.float64`, `(1, 3, 1, 3)`). A contract test accepts
any of these; a check of one exact wording is an extension test (`boundary`'s
`assert_rejects` is that stricter check).

    with pytest.raises(ValueError, match=what_is_wrong("request_ids", values=["zzz"])):
        ...
    assert_rejects_naming(call, (ValueError, TypeError), "max_new_tokens", values=[0])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

_EDGE_BEFORE = r"(?<![A-Za-z0-9_])"
_EDGE_AFTER = r"(?![A-Za-z0-9_])"


def _name_pattern(argument: str) -> str:
    """`request_id` as a whole name, each underscore also written as a space."""
    words = [re.escape(word) for word in argument.split("_")]
    return _EDGE_BEFORE + "[_ ]".join(words) + _EDGE_AFTER


def _value_pattern(value: object) -> str:
    """A string value as repr'd or quoted either way; anything else as printed."""
    if isinstance(value, str):
        return "|".join(re.escape(f"{quote}{value}{quote}") for quote in ("'", '"', "`"))
    return _EDGE_BEFORE + re.escape(str(value)) + _EDGE_AFTER


def what_is_wrong(*arguments: str, values: Sequence[object] = ()) -> str:
    """A regex (for `pytest.raises(match=...)`) accepting any name or value given."""
    if not arguments and not values:
        raise ValueError("what_is_wrong needs an argument name or an offending value")
    parts = [_name_pattern(argument) for argument in arguments]
    parts += [_value_pattern(value) for value in values]
    return "|".join(f"(?:{part})" for part in parts)


def names_what_is_wrong(message: str, *arguments: str, values: Sequence[object] = ()) -> bool:
    return re.search(what_is_wrong(*arguments, values=values), message) is not None


ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]


def assert_rejects_naming(
    call: Callable[[], object],
    exc_types: ExceptionTypes,
    arguments: str | Sequence[str],
    *,
    values: Sequence[object] = (),
) -> BaseException:
    """`call()` raises one of `exc_types` naming one of `arguments` or `values`.

    Any other exception, or none, fails with what happened (a foreign error and a
    silent acceptance read differently in a report).
    """
    names = (arguments,) if isinstance(arguments, str) else tuple(arguments)
    wanted = " or ".join([*names, *(repr(value) for value in values)])
    try:
        result = call()
    except exc_types as raised:
        error = raised
    except Exception as foreign:
        raise AssertionError(
            f"expected an error naming {wanted}, got {type(foreign).__name__}: {foreign}"
        ) from foreign
    else:
        raise AssertionError(
            f"expected an error naming {wanted}, but the call was accepted and returned "
            f"{type(result).__name__}"
        )
    message = str(error)
    assert names_what_is_wrong(message, *names, values=values), (
        f"{type(error).__name__} names neither {wanted}: {message!r}"
    )
    return error


__all__ = ["assert_rejects_naming", "names_what_is_wrong", "what_is_wrong"]
