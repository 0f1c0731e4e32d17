"""`python -m gptlab_testkit.cheats DIR`: hostile submissions must earn no credit.

Each `cheat_*.py` of DIR is graded as a learner's file is, by `python -m
gptlab_testkit.grade VARIABLE=FILE --json J --gradescope G` in a fresh process from the
repository root: the scorecard and exit status, grade's JSON and the Gradescope
`results.json`. A cheat holds when no more than its `EARNED` tests (default 0) passed
in the JSON and in Gradescope's score, and grade's verdict contains its `SAYS`
phrase (what happened). `LATE_S`: the files are read again that many seconds after
grade exits (a detached writer must have been ended). Each `class_*` folder is a class
run (`grade --submissions`) from a copy of the drills' suites: every submission must
earn nothing, and one that changed the graded checkout is named.

`ENFORCED = False` (with `WHY`) marks a cheat the grader cannot stop yet: it is run and
reported, and does not fail this command. Exit status 1 when an enforced cheat got
credit or a verdict without its phrase.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Cheat:
    path: Path
    variable: str
    cheat: str
    says: str
    earned: int | str = 0  # a count, or an honest twin's file name (what it earns)
    late_s: float = 0.0
    enforced: bool = True
    why: str = ""


def read_cheat(path: Path) -> Cheat:
    """The manifest constants of a cheat, read without running it."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return Cheat(
        path,
        str(found["VARIABLE"]),
        str(found["CHEAT"]),
        str(found["SAYS"]),
        found.get("EARNED", 0),  # type: ignore[arg-type]
        float(found.get("LATE_S", 0)),  # type: ignore[arg-type]
        bool(found.get("ENFORCED", True)),
        str(found.get("WHY", "")),
    )


_TWINS: dict[Path, int] = {}


def earned(cheat: Cheat, root: Path) -> int:
    """What the cheat's values earn honestly: its count, or its honest twin's passes."""
    if isinstance(cheat.earned, int):
        return cheat.earned
    twin = cheat.path.parent / cheat.earned
    if twin not in _TWINS:
        honest = Cheat(twin, cheat.variable, "", "", 0)
        _TWINS[twin] = _run_grade(honest, root)[1]
    return _TWINS[twin]


def grade_cheat(cheat: Cheat, root: Path) -> tuple[bool, str]:
    """(held, one line) for one cheat graded through grade and its Gradescope file."""
    allowed = earned(cheat, root)
    done, passed, score, said = _run_grade(cheat, root)
    held = passed <= allowed and score <= allowed and said and done != 0
    line = (
        f"exit {done}, {passed} passed (json; honest values earn {allowed}), score {score:g} "
        f"(Gradescope), verdict {'says' if said else 'LACKS'} {cheat.says!r}"
    )
    return held, line


def _run_grade(cheat: Cheat, root: Path) -> tuple[int, int, float, bool]:
    with tempfile.TemporaryDirectory(prefix="gptlab-cheat-") as scratch:
        report, gradescope = Path(scratch) / "grade.json", Path(scratch) / "results.json"
        command = [sys.executable, "-m", "gptlab_testkit.grade",
                   f"{cheat.variable}={cheat.path}", "--json", str(report),
                   "--gradescope", str(gradescope), "--timeout", "30"]  # fmt: skip
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        if cheat.late_s:
            time.sleep(cheat.late_s)
        output = done.stdout + done.stderr
        passed, reasons = _passed(report)
        score = _score(gradescope)
        said = cheat.says in output + "\n".join(reasons)
        return done.returncode, passed, score, said


def _passed(report: Path) -> tuple[int, list[str]]:
    if not report.exists():
        return 0, []
    try:
        payload = json.loads(report.read_text(encoding="utf-8"))
        tests = payload.get("tests", [])
        reasons = [str(t.get("reason", "")) for t in tests] + [str(payload.get("problem", ""))]
        passed = sum(t.get("outcome") == "passed" for t in tests)
        total = len([t for t in tests if t.get("outcome") != "skipped"])
        return passed, [*reasons, f"{passed}/{total}"]
    except (OSError, ValueError, AttributeError):
        return 10**6, ["unreadable report"]  # a forged or broken file is no pass here


def _score(gradescope: Path) -> float:
    if not gradescope.exists():
        return 0.0
    try:
        return float(json.loads(gradescope.read_text(encoding="utf-8"))["score"])
    except (OSError, ValueError, KeyError, TypeError):
        return float("inf")


def grade_class_cheat(folder: Path, root: Path) -> tuple[bool, str]:
    """A class run from a copy of the drills' suites: nobody earns anything, the tamperer
    is named, and the copy's tests are back as they were."""
    with tempfile.TemporaryDirectory(prefix="gptlab-class-cheat-") as scratch:
        mirror = Path(scratch) / "checkout"
        (mirror / "packages" / "drills").mkdir(parents=True)
        shutil.copy(root / "pyproject.toml", mirror / "pyproject.toml")
        shutil.copytree(root / "packages" / "drills" / "tests", mirror / "packages/drills/tests",
                        ignore=shutil.ignore_patterns("__pycache__", ".*"))  # fmt: skip
        before = sorted(p.name for p in (mirror / "packages/drills/tests/p19").iterdir())
        out = Path(scratch) / "out"
        command = [sys.executable, "-m", "gptlab_testkit.grade", "--submissions", str(folder),
                   "--out", str(out), "--timeout", "30"]  # fmt: skip
        subprocess.run(command, cwd=mirror, capture_output=True, text=True, check=False)
        after = sorted(p.name for p in (mirror / "packages/drills/tests/p19").iterdir())
        try:
            rows = json.loads((out / "class.json").read_text(encoding="utf-8"))["submissions"]
        except (OSError, ValueError, KeyError):
            return False, "no class.json"
        passed = {r["name"]: sum(t["outcome"] == "passed" for t in r["tests"]) for r in rows}
        named = [r["name"] for r in rows if "changed the graded checkout" in r.get("note", "")]
        held = not any(passed.values()) and bool(named) and before == after
        return held, f"passed per submission {passed}; named as tampering: {named}"


def main(argv: list[str]) -> int:
    if not argv or {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0 if argv else 2
    root = Path.cwd()
    failures = 0
    for folder in map(Path, argv):
        for path in sorted(folder.glob("cheat_*.py")):
            cheat = read_cheat(path)
            held, line = grade_cheat(cheat, root)
            mark = "held" if held else ("NOT STOPPED" if cheat.enforced else "not stopped yet")
            print(f"{mark:16} {path.name}: {cheat.cheat}: {line}", flush=True)
            if not cheat.enforced:
                print(f"{'':16} (not enforced: {cheat.why})")
            failures += not held and cheat.enforced
        for path in sorted(folder.glob("class_*")):
            held, line = grade_class_cheat(path.resolve(), root)
            print(f"{'held' if held else 'NOT STOPPED':16} {path.name}: {line}", flush=True)
            failures += not held
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
