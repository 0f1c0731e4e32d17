"""'did you mean ...?' for a mistyped name, from difflib's close matches."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean kv_cache?)', ' (did you mean p19 or p09?)', or '' when none is close.

    Case and `-` versus `_` are ignored: `KV-Cache` finds `kv_cache`.
    """
    by_key: dict[str, str] = {}
    for choice in choices:
        by_key.setdefault(_key(choice), choice)
    close = difflib.get_close_matches(_key(word), list(by_key), n=2, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {' or '.join(by_key[key] for key in close)}?)"


def _key(name: str) -> str:
    return name.lower().replace("-", "_")
