"""The attempt file `start` writes: a comment only (graded names, stage table), no code.

A file already there is never overwritten or deleted: it is moved into
`<home>/archive/` first (a re-solve, or `start --new`).
"""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path

from .stages import Mechanism

ARCHIVE = "archive"
WIDTH = 92


def _wrapped(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest) or [first]


def attempt_header(
    mechanism: Mechanism, names: tuple[str, ...], attempt_number: int, started: datetime
) -> str:
    lines = [
        f"{mechanism.package} practice attempt {attempt_number}, "
        f"started {started:%Y-%m-%d %H:%M} (gptlab-practice; {mechanism.source})",
        "",
        "Write from an empty editor with only seed/gpt-lab.md and CONTRACTS.md open.",
        "Graded names (define each from stage 1 on; a stub is fine until its stage):",
        "  " + ", ".join(names),
        "Other attempts in this folder are importable by their plain names",
        "(`from tiny_gpt import GPTConfig` reaches tiny_gpt_attempt.py).",
        "",
        "stage  time  build, then the stop condition",
    ]
    for stage in mechanism.stages:
        lines += _wrapped(stage.build, f"{stage.number:>4}  {stage.minutes:>4}m  ", " " * 13)
        lines += _wrapped(stage.stop, " " * 13 + "stop: ", " " * 19)
    lines += [
        "",
        "Check the current stage: gptlab-practice check   (or: nox -s practice -- check)",
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


def archive(path: Path, stamp: datetime) -> Path:
    """Move an existing attempt file into `archive/` under a name that is not taken."""
    folder = path.parent / ARCHIVE
    folder.mkdir(exist_ok=True)
    base = f"{path.stem}.{stamp:%Y%m%d-%H%M%S}"
    target = folder / f"{base}.py"
    counter = 1
    while target.exists():
        counter += 1
        target = folder / f"{base}-{counter}.py"
    path.replace(target)
    return target
