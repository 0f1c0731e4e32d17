"""A timed mock by the kit's rules: drawn by the sampler, run for the declared time within
60 minutes (a model mock: its full 60, C its 75), the attempt copied at the deadline and the
copy graded through the judge (the `grade` command, out of the attempt's reach), then the
rubric (the coding rubric; a model mock the model-build rubric): what the machine saw per
dimension beside the learner's own 0-4 scores, the total /28 and its band. Prints nothing:
the judge's report is read from its JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gptlab_drills.catalogue import DRILLS, Drill

from .build_rubric import build_evidence
from .model_mocks import ModelMock, model_mocks
from .rubric import MODEL_RUBRIC_KEYS, RUBRIC_KEYS
from .sampler import Draw, DrawHistory, exclusion, transfer_cases
from .store import MockRecord

MOCK_MINUTES = 60  # a round's whole time; the prompt's declared time runs inside it
# Which clause kinds a dimension's machine evidence reads.
CLAUSE_KINDS = {
    "contract": ("signature", "rejection"),
    "tensor": ("shape", "aliasing"),
    "numerics": ("dtype", "determinism"),
    "implementation": ("semantics",),
}


def mock_scores(mock: MockRecord) -> dict[str, int]:
    """The learner's recorded 0-4 scores of a mock, by rubric key."""
    pairs = [p.split("=") for p in (mock.scores or "").split(",") if "=" in p]
    return {key: int(value) for key, value in pairs}


def rubric_keys(mock: MockRecord) -> tuple[str, ...]:
    """The dimensions a mock is scored on: the model-build rubric's for a model round."""
    return MODEL_RUBRIC_KEYS if mock.kind == MODEL_KIND else RUBRIC_KEYS


def band(scores: dict[str, int]) -> tuple[str, str]:
    """(band, next step) by the kit's bands for a total /28."""
    total = sum(scores.values())
    if total >= 24:
        if all(v >= 2 for v in scores.values()):
            return "ready", "ready for this shape"
        return "no band", "a total of 24+ with a dimension below 2 is given no band"
    if total >= 19:
        return "19-23", "one clean re-solve"
    if total >= 13:
        return "13-18", "go back to the owning invariant"
    return "0-12", "learn the mechanism before the next mock"


def mock_draw(history: DrawHistory, clean: dict[str, int], tried: dict[str, int]) -> Draw:
    """A mock-eligible case from the weakest clean family (a family none of whose owners
    is unresolved; weakest: fewest clean passes per case tried), leaving out the last two
    ids drawn, their families and the deltas already drawn."""
    eligible = [d for d in transfer_cases() if d.mock_eligible and d.family]
    recent_families = {DRILLS[i].family for i in history.recent if i in DRILLS}
    left_out: list[tuple[str, str]] = []
    pool: list[Drill] = []
    for case in eligible:
        reason = exclusion(case, history) or (
            "its family was among the last 2 drawn" if case.family in recent_families else ""
        )
        if reason:
            left_out.append((case.id, reason))
        else:
            pool.append(case)
    if not pool:
        return Draw(None, "no mock-eligible case is left", tuple(left_out))

    def weakness(case: Drill) -> tuple[float, int]:
        family = [d.id for d in eligible if d.family == case.family]
        passes = sum(clean.get(i, 0) for i in family)
        return (passes / max(1, sum(tried.get(i, 0) for i in family)), eligible.index(case))

    chosen = min(pool, key=weakness)
    what = f"a mock-eligible case of the weakest clean family ({chosen.family})"
    return Draw(chosen, what, tuple(left_out))


MODEL_KIND = "model"


@dataclass(frozen=True)
class ModelDraw:
    """A model round (rule 2's turn) and why."""

    mock: ModelMock
    why: str


def model_turn(mocks: Sequence[MockRecord]) -> bool:
    """The kit's rule 2: a model round alternates with a mock-eligible PT. The turn follows
    the last completed (graded) round of the two kinds; the first is a PT (this project's
    choice: the rule names no first)."""
    kinds = [m.kind for m in mocks if m.tests_run is not None and m.kind in ("PT", MODEL_KIND)]
    return bool(kinds) and kinds[-1] == "PT"


def model_draw(
    mocks: Sequence[MockRecord], installed: Sequence[str], branch: str | None = None
) -> ModelDraw | None:
    """The next model mock: the first of A-D not run yet, else the one run longest ago; a
    mock whose build is not installed is left out (None: none is). B is graded on M03's
    recorded `branch`."""
    listed = model_mocks(branch)
    ready = [m for m in listed if m.package in installed]
    if not ready:
        return None
    last_run = {m.prompt: i for i, m in enumerate(mocks) if m.tests_run is not None}
    chosen = min(ready, key=lambda m: (last_run.get(m.prompt, -1), listed.index(m)))
    missing = [f"{m.letter} ({m.build} {m.package} not installed)" for m in listed
               if m not in ready]  # fmt: skip
    how = "not run yet" if chosen.prompt not in last_run else "run longest ago"
    why = (
        f"a model round after a PT round (the sampler alternates them): model mock"
        f" {chosen.letter}, {how}, graded as {chosen.build} {chosen.package}"
    )
    return ModelDraw(chosen, why + (f"; left out {', '.join(missing)}" if missing else ""))


def model_ratio(mocks: Sequence[MockRecord]) -> tuple[int, int]:
    """The kit's model-construction ratio (m, n): n the completed (graded) rounds, m the model
    rounds whose frozen copy ran a module end to end (read here as: at least one test of the
    complete forward path passed, this project's reading of "ran an end-to-end path")."""
    graded = [m for m in mocks if m.tests_run is not None]
    ran = [m for m in graded if m.kind == MODEL_KIND and _forward_passed(m)]
    return len(ran), len(graded)


def _forward_passed(mock: MockRecord) -> bool:
    seen = evidence_of(mock).get("forward", "")
    found = re.match(r"(\d+)/\d+ ", seen)
    return bool(found and int(found[1]) > 0)


def evidence_of(mock: MockRecord) -> dict[str, str]:
    """The machine's evidence per rubric key, as recorded."""
    lines = (mock.evidence or "").splitlines()
    return dict(p.split("=", 1) for p in lines if "=" in p)


@dataclass(frozen=True)
class FrozenGrade:
    passed: int
    run: int
    first_wrong: str | None
    evidence: dict[str, str]  # rubric key -> what the machine saw


Report = tuple[list[dict[str, object]], list[dict[str, object]]]  # (contract tests, rubric)


def judge(root: Path, target: str, frozen: Path, report: Path) -> Report:
    """Grade the frozen copy with the `grade` command (judged, in its own process): its
    contract tests and, for a model build, the `rubric` evidence per dimension."""
    command = [sys.executable, "-m", "gptlab_testkit.grade", target.lower(), str(frozen)]
    command += ["--root", str(root), "--json", str(report), "--workers", "1"]
    subprocess.run(command, capture_output=True, check=False, cwd=frozen.parent, timeout=900)
    if not report.is_file():
        return [], []
    found = json.loads(report.read_text(encoding="utf-8"))
    tests: list[dict[str, object]] = found.get("tests", [])
    rubric: list[dict[str, object]] = found.get("rubric", []) or []
    return [t for t in tests if t.get("kind") == "contract"], rubric


def read_model_grade(
    tests: Sequence[dict[str, object]], rubric: Sequence[dict[str, object]], build: str
) -> FrozenGrade:
    """A model round's frozen grade: tests passed, the first failing owner (the kit's rule
    7 sends a failed model mock there), the rubric evidence per dimension."""
    ran = [t for t in tests if t.get("outcome") in ("passed", "failed")]
    passed = sum(1 for t in ran if t.get("outcome") == "passed")
    failed = [t for t in ran if t.get("outcome") == "failed"]
    first = str(failed[0].get("owner")) if failed else None
    return FrozenGrade(passed, len(ran), first, build_evidence(rubric, build))


def read_grade(
    tests: Sequence[dict[str, object]],
    kinds: dict[str, str],
    used_s: float,
    declared_min: int,
    ledger: bool,
    probes: int,
) -> FrozenGrade:
    """The rubric's machine evidence: tests passed per clause kind, time, ledger, probes
    (a skipped test is neither passed nor run)."""
    tests = [t for t in tests if t.get("outcome") in ("passed", "failed")]
    passed = sum(1 for t in tests if t.get("outcome") == "passed")
    failed = [t for t in tests if t.get("outcome") == "failed"]
    evidence = {}
    for key, wanted in CLAUSE_KINDS.items():
        own = [t for t in tests if any(kinds.get(str(c)) in wanted for c in _clauses(t))]
        good = sum(1 for t in own if t.get("outcome") == "passed")
        evidence[key] = f"{good}/{len(own)} tests of its clauses passed" if own else "no test"
    evidence["testing"] = "not seen by the machine (your own tests)"
    evidence["performance"] = f"{used_s / 60:.0f} of {declared_min} minutes used"
    evidence["communication"] = (
        f"ledger {'filled' if ledger else 'not filled'}, {probes} probe(s) answered"
    )
    first = str(failed[0].get("owner")) if failed else None
    return FrozenGrade(passed, len(tests), first, evidence)


CLAUSE_KIND = re.compile(r"^- \*\*((?:PT|P|T)\d+\.\d+)\*\* \(([^)]*)\)", re.MULTILINE)


def clause_kinds(readme: Path) -> dict[str, str]:
    """{clause id: kind} from a README's clause lines, read leniently (a numbering gap
    elsewhere in the README does not hide this case's kinds)."""
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError:
        return {}
    return {m[1]: m[2] for m in CLAUSE_KIND.finditer(text)}


def _clauses(test: dict[str, object]) -> list[object]:
    found = test.get("clauses")
    return list(found) if isinstance(found, list) else []
