"""One-mistake copies of the faithful strangers in integration_tests/faithful.

A known-bad candidate in a stranger's shape is that stranger with exactly one
plausible mistake, so the ladder is shown to catch the mistake in code it has never
seen (not only in the reference). Each edit's text must occur exactly once in the
stranger's source, so a change of the stranger fails the candidate loudly instead of
silently making it correct. The copy runs as a module of its own; the stranger's
file is left as it is.

    from _strangers import stranger_with

    Engine = stranger_with("good_scheduler_heap_paged", [("old text", "new text")]).Engine
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

FAITHFUL = Path(__file__).resolve().parent.parent / "faithful"
_serial = itertools.count(1)


def edited_source(stem: str, replacements: Sequence[tuple[str, str]]) -> str:
    """The source of the faithful stranger ``stem`` with the edits applied (checked as above).

    Also what bench/grading.py writes as a self-contained class submission.
    """
    path = FAITHFUL / f"{stem}.py"
    source = path.read_text(encoding="utf-8")
    if not replacements:
        raise ValueError("a one-mistake copy needs its mistake (a replacement)")
    for old, new in replacements:
        count = source.count(old)
        if count != 1 or old == new:
            raise ValueError(
                f"{path.name} contains {old!r} {count} times, expected exactly once:"
                " the stranger changed, so update the candidate"
            )
        source = source.replace(old, new)
    return source


def stranger_with(stem: str, replacements: Sequence[tuple[str, str]]) -> ModuleType:
    """The faithful stranger ``stem`` (a file of integration_tests/faithful), edited."""
    path = FAITHFUL / f"{stem}.py"
    source = edited_source(stem, replacements)
    name = f"gptlab_stranger_{stem}_mutant_{next(_serial)}"
    module = ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and named tuples look their module up
    exec(compile(source, f"<{path.name} with one mistake>", "exec"), module.__dict__)
    return module
