"""Mutants of code that runs while a module is imported, judged in a fresh interpreter.

mutmut switches a mutant on per test, in processes forked from one that has already
imported the target and collected its tests. Code that runs only then (a config built
at import, a table filled by a module-level call, a test module's constant) ran with no
mutant switched on, so its mutants "survive" without ever having run. The mutation
runner asks which of the target's functions run during collection (`run_at_import`,
read with a profiler over the unmutated copy) and judges the surviving mutants of those
functions again, each in a fresh interpreter with the mutant switched on from the first
import (`judge_afresh`): a mutant that breaks the import, or a test, is killed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

# Collects the target's tests under a profiler; prints the (file, qualified name) of
# every function of the target's sources that ran.
_PROBE = """
import json, sys
root, out = sys.argv[1], sys.argv[2]
ran = set()
def probe(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(root):
        ran.add((frame.f_code.co_filename, frame.f_code.co_qualname))
sys.setprofile(probe)
import pytest
pytest.main(sys.argv[3:])
sys.setprofile(None)
with open(out, "w") as f:
    json.dump(sorted(ran), f)
"""


def run_at_import(
    work: Path, tests: str, environment: dict[str, str], pytest_args: Sequence[str]
) -> set[tuple[str, str]]:
    """(dotted module, qualified name) of the functions of `work/src` that run while the
    target's modules are imported and its tests collected."""
    source = work / "src"
    out = work / "import-time.json"
    env = environment | {"PYTHONPATH": str(source)}
    command = [sys.executable, "-c", _PROBE, f"{source}{os.sep}", str(out), "--collect-only"]
    command += ["-q", "--rootdir=.", *pytest_args, tests]
    subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    if not out.is_file():
        return set()
    ran = json.loads(out.read_text(encoding="utf-8"))
    return {(_module(Path(file).relative_to(source)), name) for file, name in ran}


def _module(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def judge_afresh(
    work: Path, tests: str, environment: dict[str, str], pytest_args: Sequence[str], name: str
) -> bool:
    """True when the mutant `name` (mutmut's key) is killed in a fresh interpreter: its
    tests fail, or cannot be collected, with it switched on from the first import."""
    mutants = work / "mutants"
    env = environment | {"PYTHONPATH": str(mutants / "src"), "MUTANT_UNDER_TEST": name}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "--rootdir=.", *pytest_args, tests]
    done = subprocess.run(command, cwd=mutants, env=env, capture_output=True, check=False)
    return done.returncode != 0


def rejudge(
    survivors: Sequence[tuple[str, str, str]],
    at_import: set[tuple[str, str]],
    judge: Callable[[str], bool],
) -> set[str]:
    """The names of the survivors ((name, module, function) each) that run at import and
    that `judge` kills afresh."""
    return {
        name
        for name, module, function in survivors
        if (module, function) in at_import and judge(name)
    }
