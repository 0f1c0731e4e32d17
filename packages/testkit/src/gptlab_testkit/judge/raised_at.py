"""Where a judged candidate's exception passed through the learner's own files.

The worker reports a raise by type and text, and with it the frames of the submission's
files the traceback went through (`worker.submission_frames`). The judge checks that word
(`frames_from`) and hangs it on the exception it raises (`attach`), outside its message:
a test that reads the message (a rejection's wording, `pytest.raises(match=...)`) reads
the candidate's text alone, so the location is only shown (the plugin's failure output),
never scored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ATTRIBUTE = "gptlab_raised_at"
FRAMES_KEPT = 4  # the innermost frames (the worker sends no more)
TEXT_LIMIT = 200  # a function name or a source line, cut: the worker's word is bounded


@dataclass(frozen=True)
class Frame:
    """One frame of the learner's code: the file as they named it, line, function, source."""

    path: str
    line: int
    function: str
    source: str

    def __str__(self) -> str:
        text = f"{self.path}:{self.line} in {self.function}"
        return f"{text}: {self.source}" if self.source else text


def frames_from(data: Any, folder: Path, file_names: Iterable[str]) -> tuple[Frame, ...]:
    """The worker's frames, kept only where they are well formed and name one of the
    submission's own files (`file_names`, in `folder`); anything else is dropped."""
    if not isinstance(data, list):
        return ()
    names = set(file_names)
    frames = []
    for entry in data[-FRAMES_KEPT:]:
        if not (isinstance(entry, list) and len(entry) == 4):
            continue
        name, line, function, source = entry
        well_formed = isinstance(line, int) and not isinstance(line, bool) and line > 0
        if not (well_formed and isinstance(name, str) and name in names):
            continue
        if not (isinstance(function, str) and isinstance(source, str)):
            continue
        frames.append(Frame(str(folder / name), line, _one_line(function), _one_line(source)))
    return tuple(frames)


def _one_line(text: str) -> str:
    """One line of printable text (no terminal control sequence of the worker's), cut."""
    printable = "".join(c if c.isprintable() else " " for c in text[: TEXT_LIMIT * 4])
    return " ".join(printable.split())[:TEXT_LIMIT]


def attach(error: BaseException, frames: tuple[Frame, ...]) -> None:
    if frames:
        setattr(error, ATTRIBUTE, frames)


def frames_of(error: BaseException | None) -> tuple[Frame, ...]:
    """The learner's frames an exception carries, or one it was raised from or during
    (a test that wraps the candidate's error in its own assertion)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        frames = getattr(error, ATTRIBUTE, ())
        if isinstance(frames, tuple) and frames and all(isinstance(f, Frame) for f in frames):
            return frames
        error = error.__cause__ or error.__context__
    return ()


def where_lines(frames: tuple[Frame, ...]) -> list[str]:
    """The frames as a short traceback, innermost last (where it raised)."""
    return [str(frame) for frame in frames]
