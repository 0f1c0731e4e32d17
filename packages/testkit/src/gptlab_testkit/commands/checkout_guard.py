"""A class run grades every submission against the checkout it started with.

A submission runs with the grader's rights: it can append a force-pass hook to a
conftest.py, rewrite a test, the testkit or a reference, or plant a `.pyc` beside them,
and the *next* student's run would load it. `CheckoutGuard` reads every file of the
graded tree once, before the first submission (test suites, references, the testkit,
their `__pycache__`, the root's pyproject.toml and conftest.py), and after each
submission compares the tree with that snapshot: a changed, added or removed file is
put back as it was (byte for byte; an added one is deleted) before the next submission
starts, and the submission that ended is told what it changed. The class process writes
no bytecode itself (`sys.dont_write_bytecode`), so any change is a submission's.

With `--jobs 1` (the default) every submission is graded against the tree as it was;
with `--jobs N` a change is still undone when the submission that made it ends, but a
run going on beside it may have read the changed files first (the unprivileged worker
of judge mode cannot write the tree at all).
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

_ROOT_FILES = ("pyproject.toml", "conftest.py", "noxfile.py")
_TREES = ("packages", "integration_tests")


def _files(root: Path) -> Iterator[Path]:
    for name in _ROOT_FILES:
        if (root / name).is_file():
            yield root / name
    for tree in _TREES:
        base = root / tree
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            relative = path.relative_to(base).parts
            if path.is_file() and not any(part.startswith(".") for part in relative):
                yield path


class CheckoutGuard:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        sys.dont_write_bytecode = True  # the class's own runs leave the tree as it is
        self.snapshot: dict[Path, bytes] = {}
        for path in _files(self.root):
            with contextlib.suppress(OSError):
                self.snapshot[path] = path.read_bytes()
        self.digests = {path: hashlib.sha256(data).digest() for path, data in self.snapshot.items()}

    def restore(self) -> list[str]:
        """Put the tree back as it was; the paths (relative to the root) that had changed."""
        changed: list[Path] = []
        present = set()
        for path in _files(self.root):
            present.add(path)
            try:
                same = hashlib.sha256(path.read_bytes()).digest() == self.digests.get(path)
            except OSError:
                same = False
            if not same:
                changed.append(path)
                if path in self.snapshot:
                    path.write_bytes(self.snapshot[path])
                else:
                    with contextlib.suppress(OSError):
                        path.unlink()
        for path, data in self.snapshot.items():
            if path not in present:
                changed.append(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        return sorted(str(path.relative_to(self.root)) for path in changed)
