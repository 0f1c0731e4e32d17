"""`python -m gptlab_testkit.cheats DIR [--quick | --all]`: hostile submissions earn no credit.

By default (`nox -s cheats`) every enforced `cheat_*.py` of DIR,
its honest twins and the `class_*` folders are graded in ONE class run (`grade
--submissions`, each submission forked from one warm grade process) from a copy of the
drills' suites in a scratch folder (never the working tree: a class run puts back any
change to its checkout, another engineer's edit included); the cheats named in
`GRADESCOPE` (those that attack grade's own files: the report, `results.json`) are also
graded singly through grade's Gradescope path. `--quick` (`nox -s cheats -- --quick`)
puts only the `QUICK` cheats, one per kind, in the class run. `--all`: every cheat
singly, as below.

Singly, a cheat is graded as a learner's file is, by `python -m gptlab_testkit.grade
VARIABLE=FILE --json J --gradescope G` in a fresh process from the repository root: the
scorecard and exit status, grade's JSON and the Gradescope `results.json`. A cheat holds
when no more than its `EARNED` tests (default 0; or an honest twin's file: what the same
values earn) passed, in the JSON and in Gradescope's score (in a class run: its row),
the verdict is a failure, and what grade said contains its `SAYS` phrase (what
happened). `LATE_S`: the files are read again that many seconds after grade exits (a
detached writer must have been ended). In each `class_*` folder no submission may earn
more than `CLASS_TWIN` earns (one plants a force-pass hook for the next), a submission
that changed the graded checkout is named, and the copy's tests are as they were.

`LINK` (a path in the checkout): the submission is a folder whose seed-named file is a
symbolic link to that file (the cheat's own source is never graded).
`ENFORCED = False` (with `WHY`) marks a cheat the grader cannot stop yet: it is listed
with its reason (and graded only with `--all`), and never fails this command. Exit
status 1 when an enforced cheat got credit or a verdict without its phrase.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gptlab_testkit.candidates import VARIABLES


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
    link: str = ""  # graded as a folder whose seed-named file links to this checkout file


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
        str(found.get("LINK", "")),
    )


_TWINS: dict[Path, int] = {}


def earned(cheat: Cheat, root: Path) -> int:
    """What the cheat's values earn honestly: its count, or its honest twin's passes."""
    if isinstance(cheat.earned, int):
        return cheat.earned
    twin = (cheat.path.parent / cheat.earned).resolve()
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
        graded = f"{cheat.variable}={cheat.path}"
        if cheat.link:  # a folder submission holding the link, as Gradescope's would
            graded = str(Path(scratch) / "submission")
            _submission(cheat, Path(graded), root)
        command = [sys.executable, "-m", "gptlab_testkit.grade", graded, "--json", str(report),
                   "--gradescope", str(gradescope), "--timeout", TIMEOUT]  # fmt: skip
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
        mirror = _mirror(root, Path(scratch))
        before = sorted(p.name for p in (mirror / "packages/drills/tests/p19").iterdir())
        out = Path(scratch) / "out"
        command = [sys.executable, "-m", "gptlab_testkit.grade", "--submissions", str(folder),
                   "--out", str(out), "--timeout", TIMEOUT]  # fmt: skip
        subprocess.run(command, cwd=mirror, capture_output=True, text=True, check=False)
        after = sorted(p.name for p in (mirror / "packages/drills/tests/p19").iterdir())
        try:
            rows = json.loads((out / "class.json").read_text(encoding="utf-8"))["submissions"]
        except (OSError, ValueError, KeyError):
            return False, "no class.json"
        passed = {r["name"]: sum(t["outcome"] == "passed" for t in r["tests"]) for r in rows}
        named = [r["name"] for r in rows if "changed the graded checkout" in r.get("note", "")]
        allowed = earned(Cheat(folder.parent / "_", "DRILL_P19_MODULE", "", "", CLASS_TWIN), root)
        held = bool(passed) and max(passed.values()) <= allowed and before == after
        return held, (
            f"passed per submission {passed} (honest values earn {allowed}); named as "
            f"changing the graded checkout: {named or 'none (no change landed)'}"
        )


# `--quick` (`nox -s cheats -- --quick`: the step must stay near a minute): one cheat per kind
# in the class run (pytest's entry points, the testkit's records, the comparisons, the
# caller's frames, an object the grader lent, the reference, skipping, dropping, a linked
# file, a stopped judge, a forged report), the class_* folders, GRADESCOPE.
QUICK = (
    "cheat_p19_report_from_item_and_call.py", "cheat_p19_testkit_records.py",
    "cheat_p19_comparisons.py", "cheat_p19_frame_oracle.py", "cheat_p25_lent_expert_globals.py",
    "cheat_p19_exec_reference.py", "cheat_p19_skips_what_it_fails.py", "cheat_p19_drops_tests.py",
    "cheat_p19_links_reference.py", "cheat_p19_stops_its_judge.py",
    "cheat_p19_forges_report.py", "cheat_p19_finds_another_copy.py", "cheat_p19_plants_a_pth.py",
    "cheat_p14_forges_its_signature.py",
)  # fmt: skip
# Per test: generous, so a loaded CI machine cannot make a twin earn less than its cheat.
TIMEOUT = "120"
# What a class_* folder's submissions return: they may earn what this honest file earns.
CLASS_TWIN = "_honest_p19_zeros.py"
# Cheats that attack grade's own output files: graded singly through the Gradescope path.
GRADESCOPE = (
    "cheat_p19_detached_writer.py", "cheat_p19_rewrites_report.py",
    "cheat_p19_forges_report.py", "cheat_p19_links_reference.py",
)  # fmt: skip


def _mirror(root: Path, scratch: Path, packages: Sequence[str] = ()) -> Path:
    """A copy of what a drill class run reads from its checkout (the drills' suites, and
    the suites of the `packages` a cheat is graded as: kv_cache's)."""
    mirror = scratch / "checkout"
    (mirror / "packages" / "testkit").mkdir(parents=True)
    shutil.copy(root / "pyproject.toml", mirror / "pyproject.toml")
    # What makes a folder a checkout to grade from: without it grade's suites are this one's.
    shutil.copy(root / "packages/testkit/pyproject.toml", mirror / "packages/testkit")
    for package in ["drills", *packages]:
        shutil.copytree(root / "packages" / package / "tests", mirror / f"packages/{package}/tests",
                        ignore=shutil.ignore_patterns("__pycache__", ".*"))  # fmt: skip
    return mirror


def _snapshot(mirror: Path) -> dict[str, bytes]:
    tests = mirror / "packages" / "drills" / "tests"
    return {str(p.relative_to(tests)): p.read_bytes() for p in tests.rglob("*.py")}


def _submission(cheat: Cheat, folder: Path, root: Path) -> None:
    """The cheat's file under its seed name in a folder of its own (LINK: a symbolic
    link to that file of the checkout instead)."""
    folder.mkdir()
    target = folder / f"{VARIABLES[cheat.variable].stems[0]}.py"
    if cheat.link:
        target.symlink_to((root / cheat.link).resolve())
    else:
        shutil.copy(cheat.path, target)


def _row_said(row: dict[str, Any], out: Path) -> str:
    log = out / "logs" / f"{row['name']}.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    tests = row.get("tests") or []
    reasons = [str(t.get("reason", "")) for t in tests if isinstance(t, dict)]
    return "\n".join([text, str(row.get("note", "")), str(row.get("verdict", "")), *reasons])


def batch(cheats: list[Cheat], classes: list[Path], root: Path) -> list[tuple[str, bool, str]]:
    """Every cheat, twin and class folder in one class run: (name, held, line) each."""
    twins = {
        (c.path.parent / c.earned).resolve(): c.variable
        for c in cheats
        if isinstance(c.earned, str)
    }
    if classes:
        twins.setdefault(classes[0].parent / CLASS_TWIN, "DRILL_P19_MODULE")
    with tempfile.TemporaryDirectory(prefix="gptlab-cheats-") as scratch_name:
        scratch = Path(scratch_name)
        mechanisms = [c.variable for c in cheats if not c.variable.startswith("DRILL_")]
        packages = sorted({VARIABLES[v].package for v in mechanisms if v in VARIABLES})
        mirror = _mirror(root, scratch, packages)
        submissions, out = scratch / "submissions", scratch / "out"
        submissions.mkdir()
        for twin, variable in twins.items():
            _submission(Cheat(twin, variable, "", ""), submissions / f"twin_{twin.stem}", root)
        for cheat in cheats:
            _submission(cheat, submissions / cheat.path.stem, root)
        tamperers = {}
        for folder in classes:  # its submissions in their own order, after the cheats
            for member in sorted(p for p in folder.iterdir() if p.is_dir()):
                name = f"{folder.name}.{member.name}"
                shutil.copytree(member, submissions / name)
                tamperers[name] = folder.name
        before = _snapshot(mirror)
        command = [sys.executable, "-m", "gptlab_testkit.grade", "--submissions",
                   str(submissions), "--out", str(out), "--timeout", TIMEOUT]  # fmt: skip
        done = subprocess.run(command, cwd=mirror, capture_output=True, text=True, check=False)
        try:
            payload = json.loads((out / "class.json").read_text(encoding="utf-8"))
            rows = {str(r["name"]): r for r in payload["submissions"]}
        except (OSError, ValueError, KeyError, TypeError):
            tail = (done.stdout + done.stderr)[-600:]
            return [
                ("class run", False, f"no readable class.json (exit {done.returncode}): {tail}")
            ]
        untouched = _snapshot(mirror) == before
        passes = {n: sum(t.get("outcome") == "passed" for t in r["tests"]) for n, r in rows.items()}
        for twin in twins:
            _TWINS[twin] = passes.get(f"twin_{twin.stem}", 0)
        found = [_batch_cheat(cheat, rows.get(cheat.path.stem), out, root) for cheat in cheats]
        allowed = passes.get(f"twin_{Path(CLASS_TWIN).stem}", 0)
        for folder in classes:
            members = {n: r for n, r in rows.items() if tamperers.get(n) == folder.name}
            named = [n for n, r in members.items() if "changed the graded checkout" in r["note"]]
            got = {n: passes[n] for n in members}
            held = bool(members) and max(got.values()) <= allowed and untouched
            line = (
                f"passed per submission {got} (honest values earn {allowed}); named as "
                f"changing the graded checkout: {named or 'none (no change landed)'}"
            )
            found.append((folder.name, held, line + ("" if untouched else "; TESTS CHANGED")))
        return found


def _batch_cheat(
    cheat: Cheat, row: dict[str, Any] | None, out: Path, root: Path
) -> tuple[str, bool, str]:
    if row is None:
        return cheat.path.name, False, "no row in the class run"
    allowed = earned(cheat, root)
    tests = row.get("tests") or []
    passed = sum(t.get("outcome") == "passed" for t in tests if isinstance(t, dict))
    said = cheat.says in _row_said(row, out)
    held = passed <= allowed and said and row.get("verdict") != "pass"
    line = (
        f"class run: {row.get('verdict')}, {passed} passed (honest values earn {allowed}), "
        f"verdict {'says' if said else 'LACKS'} {cheat.says!r}"
    )
    return cheat.path.name, held, line


def _report(name: str, cheat: Cheat | None, held: bool, line: str) -> int:
    enforced = cheat is None or cheat.enforced
    mark = "held" if held else ("NOT STOPPED" if enforced else "not stopped yet")
    print(f"{mark:16} {name}: {cheat.cheat + ': ' if cheat else ''}{line}", flush=True)
    if cheat is not None and not cheat.enforced:
        print(f"{'':16} (not enforced: {cheat.why})")
    return int(not held and enforced)


def main(argv: list[str]) -> int:
    if not argv or {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0 if argv else 2
    every, quick = "--all" in argv, "--quick" in argv
    root = Path.cwd()
    failures = 0
    for folder in (Path(a) for a in argv if a not in ("--all", "--quick")):
        cheats = [read_cheat(path) for path in sorted(folder.glob("cheat_*.py"))]
        classes = [p.resolve() for p in sorted(folder.glob("class_*"))]
        if every:
            for cheat in cheats:
                failures += _report(cheat.path.name, cheat, *grade_cheat(cheat, root))
            for path in classes:
                failures += _report(path.name, None, *grade_class_cheat(path, root))
            continue
        enforced = [cheat for cheat in cheats if cheat.enforced]
        by_name = {cheat.path.name: cheat for cheat in cheats}
        batched = [c for c in enforced if not quick or c.path.name in QUICK]
        for name, held, line in batch(batched, classes, root):
            failures += _report(name, by_name.get(name), held, line)
        for cheat in enforced:
            if cheat.path.name in GRADESCOPE:
                failures += _report(cheat.path.name, cheat, *grade_cheat(cheat, root))
        for cheat in cheats:
            if not cheat.enforced:
                print(f"{'not enforced':16} {cheat.path.name}: {cheat.cheat} ({cheat.why};"
                      " graded with --all)")  # fmt: skip
        if quick:
            left = [
                c.path.name for c in enforced if c not in batched and c.path.name not in GRADESCOPE
            ]
            print(f"{'not run':16} (--quick) {', '.join(left) or 'none'}")
    return 1 if failures else 0


def run() -> None:
    """The command."""
    raise SystemExit(main(sys.argv[1:]))
