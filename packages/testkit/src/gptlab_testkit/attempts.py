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
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .seed_modules import SEED_MODULES, seed_module

ATTEMPT_SUFFIX = "_attempt"


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
    path = path.resolve()
    folder = _FOLDERS.get(path.parent)
    if folder is None:
        folder = _FOLDERS[path.parent] = AttemptFolder(path.parent)
    return folder.load(path)
