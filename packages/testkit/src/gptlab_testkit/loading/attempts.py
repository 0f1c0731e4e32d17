"""Load a stranger's attempt files so their plain-name sibling imports reach each other.

A seed-style attempt is one folder of plain modules importing each other by name
(`from tiny_gpt import GPTConfig`, `from cache_aware_lm import CacheAwareCausalLM`).
Four of those names are also this project's packages, so the folder cannot simply
go on `sys.path`: the project's tests would import the candidate's `cache_aware_lm`.

Instead every candidate module executes with its own `__builtins__`, whose
`__import__` resolves a top-level name found in the candidate's folder to the
candidate's file, a seed lab name the folder lacks (`tiny_gpt`, `cache_aware_lm`,
`kv_cache`, `prefix_cache`, `chunked_prefill`, `speculative_decoding`) to this project's
reference under the seed's names (`seed_modules`: a one-file attempt needs no sibling
written first), and everything else exactly as usual. The project's tests and
references keep their ordinary imports, in the same process. Candidate modules are
registered in `sys.modules` under private names (`gptlab_candidate_<stem>_<tag>`),
never under the plain names.

Limit: `importlib.import_module("tiny_gpt")` inside a candidate is not redirected;
`import` statements (at module level or in functions) are.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.util
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from gptlab_testkit.loading.seed_modules import SEED_MODULES, seed_module

ATTEMPT_SUFFIX = "_attempt"
# A submission folder is read entry by entry; past this many the rest is not looked at
# (a zip of a million files must not stall grade before anything is graded).
MAX_SUBMISSION_ENTRIES = 20_000


class SubmissionLinkError(ValueError):
    """A submission holds a symbolic link: refused before anything is graded (one line)."""


def _refused(path: Path) -> SubmissionLinkError:
    return SubmissionLinkError(
        f"{path}: a symbolic link; a submission's files are read without following links "
        "(put the file itself there)"
    )


def refuse_links(path: Path, *, travelling: bool = False) -> None:
    """Raise SubmissionLinkError naming the first symbolic link of a submission.

    `path` itself is read with lstat (never followed); a folder is walked without
    following anything, every entry at any depth. `travelling`: `path` is one file
    graded alone, whose folder's plain modules travel with it (the worker gets them
    as sibling modules): those entries are checked too, and nothing deeper.
    A link is refused whatever it points to: the reference, another file, a folder.
    """
    if stat.S_ISLNK(os.lstat(path).st_mode):
        raise _refused(path)
    if travelling:
        with os.scandir(path.parent) as entries:
            for entry in entries:
                if entry.name.endswith(".py") and entry.is_symlink():
                    raise _refused(Path(entry.path))
        return
    if stat.S_ISDIR(os.lstat(path).st_mode):
        _walk_without_links(path)


def _walk_without_links(folder: Path) -> None:
    pending, seen = [folder], 0
    while pending and seen < MAX_SUBMISSION_ENTRIES:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                seen += 1
                if entry.is_symlink():
                    raise _refused(Path(entry.path))
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))


def sibling_files(folder: Path) -> dict[str, Path]:
    """Importable name -> file for the plain modules of a folder.

    `name_attempt.py` also answers `import name` when the folder has no `name.py`
    (an attempt that imports its own siblings by the seed's names).
    """
    files = {path.stem: path for path in sorted(folder.glob("*.py")) if path.stem.isidentifier()}
    aliases = {
        stem.removesuffix(ATTEMPT_SUFFIX): path
        for stem, path in files.items()
        if stem.endswith(ATTEMPT_SUFFIX) and stem.removesuffix(ATTEMPT_SUFFIX) not in files
    }
    return {**aliases, **files}


class AttemptFolder:
    """The candidate modules of one folder, each loaded once, importing each other by name."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.siblings = sibling_files(folder)
        self._tag = hashlib.sha1(str(folder).encode()).hexdigest()[:8]
        self._modules: dict[Path, ModuleType] = {}
        self._builtins = {**vars(builtins), "__import__": self._import}

    def load(self, path: Path) -> ModuleType:
        """Execute `path` (a file of this folder) once; later calls return the same module."""
        if path in self._modules:
            return self._modules[path]
        if path.is_symlink():  # (grade refused it already; a file swapped in since is too)
            raise _refused(path)
        module_name = f"gptlab_candidate_{path.stem}_{self._tag}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load a module from {path}")
        module = importlib.util.module_from_spec(spec)
        module.__dict__["__builtins__"] = self._builtins
        # Registered before execution: dataclasses and pickling look modules up by name,
        # and a sibling cycle must find the half-built module instead of recursing.
        sys.modules[module_name] = module
        self._modules[path] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            del self._modules[path]
            raise
        return module

    def _import(
        self,
        name: str,
        importer_globals: Mapping[str, Any] | None = None,
        importer_locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> ModuleType:
        top, _, rest = name.partition(".")
        if level == 0 and top in self.siblings:
            if rest:
                raise ModuleNotFoundError(
                    f"No module named {name!r} ({top!r} is the plain module "
                    f"{self.siblings[top].name}, not a package)",
                    name=name,
                )
            return self.load(self.siblings[top])
        if level == 0 and name in SEED_MODULES:
            return seed_module(name)  # a seed lab the folder lacks: the reference stands in
        return builtins.__import__(name, importer_globals, importer_locals, fromlist or (), level)


_FOLDERS: dict[Path, AttemptFolder] = {}


def load_attempt_file(path: Path) -> ModuleType:
    """Import one candidate file; its folder's plain modules come first for its imports."""
    if path.is_symlink():
        raise _refused(path)
    path = path.resolve()
    folder = _FOLDERS.get(path.parent)
    if folder is None:
        folder = _FOLDERS[path.parent] = AttemptFolder(path.parent)
    return folder.load(path)
