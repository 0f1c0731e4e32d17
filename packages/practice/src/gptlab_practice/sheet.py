"""The attempt file `start` writes: a comment only (graded names, stages, ledger, probes).

The ledger (the kit's "learned" asks for it before code) and a drill's probes are
fields answered on `# > ` lines under each; `check` reads them back. A file already
there is never overwritten or deleted: it is moved into `<home>/archive/` first.
"""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path

from .stages import Mechanism, is_kernel, readme_of

ARCHIVE = "archive"
WIDTH = 92
ANSWER = ">"  # an answer line: `# > text`
# The kit's ledger: what "learned" asks to be stated before code.
LEDGER = (
    "shapes (name every tensor dimension):",
    "aliasing and allocation:",
    "numerical stability:",
    "time / memory / synchronisation cost:",
)


def _probe_label(number: int, question: str) -> str:
    return f"probe {number}: {question}"


def _wrapped(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest) or [first]


def attempt_header(
    mechanism: Mechanism, names: tuple[str, ...], attempt_number: int, started: datetime
) -> str:
    lines = _intro(mechanism, names, attempt_number, started)
    lines += ["", "Ledger: fill it before code, each answer on `# > ` lines under its field."]
    for field in LEDGER:
        lines += [field, f"{ANSWER} "]
    probes = mechanism.drill.probes if mechanism.drill else ()
    if probes:
        lines += ["", "Probes: answer each once the check passes, without reopening the code."]
        for number, question in enumerate(probes, start=1):
            lines += [_probe_label(number, question), f"{ANSWER} "]
    lines += [
        "",
        "Check the current stage: gptlab-practice check   (or: nox -s practice -- check)",
        "Re-check on every save:  gptlab-practice watch",
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


def _intro(
    mechanism: Mechanism, names: tuple[str, ...], attempt_number: int, started: datetime
) -> list[str]:
    lines = [
        f"{mechanism.package} practice attempt {attempt_number}, "
        f"started {started:%Y-%m-%d %H:%M} (gptlab-practice; {mechanism.source})",
        "",
    ]
    if mechanism.drill:  # the kit's protocol for a drill (packages/drills/README.md)
        tools = "Triton and PyTorch" if is_kernel(mechanism.drill) else "PyTorch only"
        lines += [
            "No assistant. Restate the contract and reject bad shapes first; two ordinary",
            f"examples and one hostile case; {tools}; compare with a slow reference path.",
            f"Graded names: {', '.join(names)}",
            f"Contract: {readme_of(mechanism.drill)}, section {mechanism.package}.",
        ]
    else:
        lines += [
            "Write from an empty editor with only its contract open: docs/contracts.md,",
            f"section {mechanism.suite}, in the gptlab checkout.",
            "Graded names (define each from stage 1 on; a stub is fine until its stage):",
            "  " + ", ".join(names),
            "Other attempts in this folder are importable by their plain names",
            "(`from tiny_gpt import GPTConfig` reaches tiny_gpt_attempt.py).",
        ]
    lines += ["", "stage  time  build, then the stop condition"]
    for stage in mechanism.stages:
        lines += _wrapped(stage.build, f"{stage.number:>4}  {stage.minutes:>4}m  ", " " * 13)
        lines += _wrapped(stage.stop, " " * 13 + "stop: ", " " * 19)
    return lines


def answers(text: str, labels: tuple[str, ...]) -> dict[str, str]:
    """{label: the text of its `# > ` lines} for each label found in the file's comments."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        body = line[1:].strip() if line.startswith("#") else None
        if body is not None and body in labels:
            current = body
            found.setdefault(body, [])
        elif body is not None and body.startswith(ANSWER) and current is not None:
            found[current].append(body[len(ANSWER) :].strip())
        else:
            current = None
    return {label: " ".join(p for p in parts if p) for label, parts in found.items()}


def ledger_filled(text: str) -> bool:
    """Is every ledger field answered? (The tool cannot see *when* it was written.)"""
    written = answers(text, LEDGER)
    return all(written.get(field) for field in LEDGER)


def probe_answers(text: str, probes: tuple[str, ...]) -> tuple[tuple[int, str, str], ...]:
    """(number, question, answer) of every answered probe."""
    labels = tuple(_probe_label(n, q) for n, q in enumerate(probes, start=1))
    written = answers(text, labels)
    return tuple(
        (n, q, written[label])
        for n, (q, label) in enumerate(zip(probes, labels, strict=True), start=1)
        if written.get(label)
    )


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
