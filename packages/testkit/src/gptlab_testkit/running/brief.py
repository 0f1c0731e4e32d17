"""Failure text without whole tensor reprs, for `--tb=line` (grade's FAILURES section).

pytest's assertion rewriting prints each operand's repr, a tensor's in full with its newlines
escaped (`tensor([[0, 1],\\n        [2, 3]])`), and a message may embed tensors over many
lines. A line-style report keeps its words and drops those reprs: `tensor(...)`.
"""

from __future__ import annotations

from typing import Any

_OPEN = "tensor("
SHORT_REPR = 60  # a repr up to this long, on one line, stays: `tensor(3)`, `tensor([1, 2])`


def without_tensor_reprs(text: str) -> str:
    """`text` with every long or multi-line `tensor(...)` repr replaced by `tensor(...)`."""
    pieces: list[str] = []
    position = 0
    while (start := text.find(_OPEN, position)) != -1:
        end = _closing(text, start + len(_OPEN) - 1)
        span = text[start : end + 1]
        long = len(span) > SHORT_REPR or "\n" in span or "\\n" in span
        pieces += [text[position:start], "tensor(...)" if long else span]
        position = end + 1
    pieces.append(text[position:])
    return "".join(pieces)


def _closing(text: str, opening: int) -> int:
    """Index of the parenthesis closing the one at `opening` (the text's end if cut short)."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return len(text) - 1


def brief_longrepr(longrepr: Any) -> None:
    """Shorten a failed report's text in place (pytest's ExceptionChainRepr; others kept)."""
    for traceback, crash, _ in getattr(longrepr, "chain", []):
        if crash is not None:
            crash.message = without_tensor_reprs(crash.message)
        for entry in getattr(traceback, "reprentries", []):
            lines = getattr(entry, "lines", None)
            if lines:
                entry.lines = without_tensor_reprs("\n".join(lines)).split("\n")
