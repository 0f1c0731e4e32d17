"""known_bad proves a target again only when what its verdict depends on changed.

Each test builds a small drills-shaped repository in a temporary folder (one drill, p20:
a reference, a suite, two known-bad candidates, a faithful one, a clause-mutant file) and
runs `known_bad.main` there with its grading runs replaced by canned verdicts: what is
under test is which targets are graded and stamped, not the grading itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit.audit import known_bad
from gptlab_testkit.audit import known_bad_stamps as stamps
from gptlab_testkit.clauses import Clause
from gptlab_testkit.running.results import TestResult
from gptlab_testkit.running.suites import SuiteRun

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

FILES = {
    "pyproject.toml": (
        '[tool.pytest.ini_options]\naddopts = ["-ra"]\n\n[tool.ruff]\nline-length = 99\n'
    ),
    "packages/testkit/src/gptlab_testkit/judge/client.py": "TIMEOUT = 1\n",
    "packages/testkit/src/gptlab_testkit/oracles.py": "ATOL = 1\n",
    "packages/testkit/src/gptlab_worker/wire.py": "LIMIT = 1\n",
    "packages/testkit/src/gptlab_testkit/judge/policy.py": (
        'JUDGED_DRILLS = (\n    "P20", "P21",\n)\nLOOPBACK = {"DRILL_P21_MODULE"}\nMEMORY = 1\n'
    ),
    "packages/testkit/src/gptlab_testkit/judge/advisory.py": (
        'ADVISORY_CLAUSES = {\n    "P20.3": "new memory",\n    "P21.2": "new memory",\n}\n'
    ),
    "packages/testkit/src/gptlab_testkit/running/routing.toml": (
        '[p20]\npackage = "drills"\ndrills = ["P20"]\n\n[p21]\npackage = "drills"\n'
        'drills = ["P21"]\n\n[cache]\npackage = "tinygpt"\ndrills = ["P20", "P21"]\n'
    ),
    "packages/testkit/src/gptlab_testkit/commands/classroom.py": "ROWS = 1\n",
    "packages/testkit/src/gptlab_testkit/audit/mutation.py": "JOBS = 1\n",
    "packages/drills/pyproject.toml": '[project]\nname = "gptlab-drills"\ndependencies = []\n',
    "packages/drills/src/gptlab_drills/_describe.py": "def described(f):\n    return f\n",
    "packages/drills/src/gptlab_drills/p20.py": "def kv_append(x):\n    return x\n",
    "packages/drills/src/gptlab_drills/p21.py": "def other(x):\n    return x\n",
    "packages/drills/src/gptlab_drills/catalogue.toml": (
        '# the drills\n[P20]\ntitle = "append"\n\n[P21]\ntitle = "other"\n'
    ),
    "packages/drills/tests/conftest.py": "",
    "packages/drills/tests/p20/test_p20_tiny.py": (
        "from gptlab_testkit import candidate\n\n\n"
        'def test_x():\n    candidate("DRILL_P20_MODULE")\n'
    ),
    "packages/drills/tests/p21/test_p21_tiny.py": (
        "from gptlab_testkit import candidate\n\n\n"
        'def test_y():\n    candidate("DRILL_P21_MODULE")\n'
    ),
    "packages/drills/known_bad/_helper.py": "SHARED = 1\n",
    "packages/drills/known_bad/bad_p20_first.py": (
        '"""A first mistake."""\nfrom _helper import SHARED\n\n'
        'VARIABLE = "DRILL_P20_MODULE"\nEXPECTED_OWNER = "p20"\n'
    ),
    "packages/drills/known_bad/bad_p20_second.py": (
        '"""A second mistake."""\n\nVARIABLE = "DRILL_P20_MODULE"\nEXPECTED_OWNER = "p20"\n'
    ),
    "packages/drills/faithful/good_p20_stranger.py": (
        '"""A stranger\'s way."""\n\nVARIABLE = "DRILL_P20_MODULE"\n'
    ),
    "packages/drills/clause_mutants/p20.toml": (
        '[[mutant]]\nclause = "P20.1"\nmistake = "returns nothing"\n'
        'replace = [["return x", "return None"]]\n'
    ),
}
STAMP = Path("packages/drills/known_bad/stamps/p20.stamp")
ARGS = [
    "packages/drills/known_bad",
    "--faithful",
    "packages/drills/faithful",
    "--clause-mutants",
    "packages/drills/clause_mutants",
]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    # No torch or references to warm up: the runs below are canned.
    monkeypatch.setattr(known_bad, "warm_up", lambda: None)
    monkeypatch.setattr(known_bad, "preload", lambda variables: None)
    return tmp_path


class CannedRuns:
    """Stands in for known_bad._run_all: every known-bad candidate caught by two checks of
    its drill's suite (unless named in `missed`), every faithful and reference run passing."""

    def __init__(self, missed: tuple[str, ...] = ()) -> None:
        self.missed = missed
        self.graded: list[str] = []

    def __call__(self, jobs: list[tuple[str, object, int]], workers: int) -> dict[int, SuiteRun]:
        self.graded += [label for label, _, _ in jobs]
        return {index: self.run(label) for index, (label, _, _) in enumerate(jobs)}

    def run(self, label: str) -> SuiteRun:
        if not label.startswith("bad_") or label in self.missed:
            return SuiteRun(0, [], "")
        failed = [
            TestResult(f"packages/drills/tests/p20/test_p20_tiny.py::test_{n}", "p20", "p20",
                       "contract", (), "failed", error="AssertionError")
            for n in (1, 2)
        ]  # fmt: skip
        return SuiteRun(1, failed, "")


def grade(
    monkeypatch: pytest.MonkeyPatch, *extra: str, missed: tuple[str, ...] = ()
) -> tuple[int, CannedRuns]:
    runs = CannedRuns(missed)
    monkeypatch.setattr(known_bad, "_run_all", runs)
    return known_bad.main([*ARGS, *extra]), runs


def test_a_passing_run_stamps_the_target_and_an_unchanged_tree_then_skips_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = grade(monkeypatch)
    assert code == 0
    assert {"bad_p20_first", "bad_p20_second", "bad_p20_clause_P20_1_1"} <= set(first.graded)
    assert (repo / STAMP).is_file()
    assert "stamps written: 1 (p20)" in capsys.readouterr().out

    code, second = grade(monkeypatch)

    assert code == 0
    assert second.graded == []
    out = capsys.readouterr().out
    assert "proved, unchanged since their stamps: 1 drill" in out
    assert "nothing to grade" in out


def test_a_failed_run_writes_no_stamp(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _ = grade(monkeypatch, missed=("bad_p20_second",))

    assert code == 1
    assert not (repo / STAMP).exists()


def test_a_stale_stamp_never_counts(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / STAMP).parent.mkdir(parents=True)
    (repo / STAMP).write_text("0" * 64 + "\n")

    _, runs = grade(monkeypatch)

    assert "bad_p20_first" in runs.graded
    assert (repo / STAMP).read_text().strip() != "0" * 64


def test_all_grades_a_stamped_target_again(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grade(monkeypatch)

    _, runs = grade(monkeypatch, "--all")

    assert "bad_p20_first" in runs.graded


def test_a_k_run_stamps_only_a_target_it_graded_wholly(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, part = grade(monkeypatch, "-k", "p20_first")
    assert [label for label in part.graded if label.startswith(("bad_", "faithful"))] == [
        "bad_p20_first"
    ]
    assert not (repo / STAMP).exists()

    grade(monkeypatch, "-k", "p20")

    assert (repo / STAMP).is_file()


def targets(root: Path) -> dict[str, stamps.Target]:
    """The targets of the temporary repository, as a run computes them."""
    every = [known_bad.read_known_bad(p) for p in sorted(Path(ARGS[0]).glob("bad_*.py"))]
    scratch = root / "scratch"
    scratch.mkdir(exist_ok=True)
    every += known_bad.clause_mutant_candidates(Path(ARGS[4]), scratch)
    faithful = known_bad.faithful_candidates(Path(ARGS[2]))
    facts = stamps.verdict_facts(root, "default", 3, "enforce")
    clauses = {
        "P20.1": Clause("P20.1", "signature", "start is a keyword"),
        "P21.1": Clause("P21.1", "signature", "another drill's clause"),
    }
    members = [known_bad.stamp_member(m) for m in [*every, *faithful]]
    return stamps.ladder_targets(root, members, [Path(ARGS[0])], [Path(ARGS[2])], facts, clauses)


def stamp_now(root: Path) -> stamps.Target:
    target = targets(root)["p20"]
    stamps.write_stamp(target, target.digest(root))
    return target


@pytest.mark.parametrize(
    "edited",
    [
        "packages/drills/src/gptlab_drills/p20.py",  # the reference
        "packages/drills/src/gptlab_drills/_describe.py",  # a module the drills share
        "packages/drills/tests/p20/test_p20_tiny.py",  # the suite
        "packages/drills/tests/conftest.py",  # a conftest above it
        "packages/drills/known_bad/bad_p20_second.py",  # a known-bad candidate
        "packages/drills/known_bad/_helper.py",  # a file a candidate reads
        "packages/drills/faithful/good_p20_stranger.py",  # a faithful candidate
        "packages/drills/clause_mutants/p20.toml",  # its clause mutants
        "packages/testkit/src/gptlab_testkit/judge/client.py",  # the judge
        "packages/testkit/src/gptlab_testkit/oracles.py",  # what suites check with
        "packages/testkit/src/gptlab_worker/wire.py",  # the worker
    ],
)
def test_a_change_to_what_the_verdict_depends_on_makes_the_stamp_stale(
    repo: Path, edited: str
) -> None:
    assert stamp_now(repo).fresh(repo)

    path = repo / edited
    path.write_text(path.read_text() + "# edited\n")

    assert not targets(repo)["p20"].fresh(repo)


def test_a_new_test_file_in_the_suite_makes_the_stamp_stale(repo: Path) -> None:
    stamp_now(repo)

    (repo / "packages/drills/tests/p20/test_p20_more.py").write_text("X = 'DRILL_P20_MODULE'\n")

    assert not targets(repo)["p20"].fresh(repo)


def test_the_pytest_settings_and_the_clause_lines_are_part_of_the_digest(repo: Path) -> None:
    target = stamp_now(repo)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"-ra"', '"-rN"'))
    assert not targets(repo)["p20"].fresh(repo)

    changed = stamps.Target(target.name, target.kind, target.stamp, target.inputs,
                            (*target.facts[:-1], "clause P20.1 (signature) reworded"))  # fmt: skip
    assert changed.digest(repo) != target.digest(repo)


def test_another_torch_makes_every_stamp_stale(repo: Path) -> None:
    target = stamp_now(repo)
    facts = tuple(f if not f.startswith("torch ") else "torch 0.0.1" for f in target.facts)

    other = stamps.Target(target.name, target.kind, target.stamp, target.inputs, facts)

    assert other.digest(repo) != target.recorded()


@pytest.mark.parametrize(
    "edited",
    [
        "packages/drills/src/gptlab_drills/p21.py",  # another drill's reference
        "packages/drills/tests/p21/test_p21_tiny.py",  # another drill's suite
        "packages/testkit/src/gptlab_testkit/commands/classroom.py",  # a class command
        "packages/testkit/src/gptlab_testkit/audit/mutation.py",  # another audit
    ],
)
def test_a_change_elsewhere_keeps_the_stamp_fresh(repo: Path, edited: str) -> None:
    stamp_now(repo)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("99", "100"))  # ruff's, not pytest's

    path = repo / edited
    path.write_text(path.read_text() + "# edited\n")

    assert targets(repo)["p20"].fresh(repo)


@pytest.mark.parametrize(
    ("importer", "line"),
    [
        ("packages/drills/src/gptlab_drills/p20.py", "from .p21 import other\n"),
        ("packages/drills/tests/p20/test_p20_tiny.py", "from gptlab_drills.p21 import other\n"),
    ],
)
def test_a_drill_that_imports_another_depends_on_its_reference(
    repo: Path, importer: str, line: str
) -> None:
    path = repo / importer
    path.write_text(line + path.read_text())
    stamp_now(repo)

    other = repo / "packages/drills/src/gptlab_drills/p21.py"
    other.write_text(other.read_text() + "# edited\n")

    assert not targets(repo)["p20"].fresh(repo)


def test_the_digest_names_files_relative_to_the_root(repo: Path) -> None:
    target = targets(repo)["p20"]

    names = {stamps.relative_name(path, repo) for path in target.inputs}

    assert "packages/drills/src/gptlab_drills/p20.py" in names
    assert not any(name.startswith("/") or str(repo) in name for name in names)


POLICY = "packages/testkit/src/gptlab_testkit/judge/policy.py"
ADVISORY = "packages/testkit/src/gptlab_testkit/judge/advisory.py"
ROUTING = "packages/testkit/src/gptlab_testkit/running/routing.toml"
CATALOGUE = "packages/drills/src/gptlab_drills/catalogue.toml"


@pytest.mark.parametrize(
    ("table", "old", "new"),
    [
        (POLICY, '"P20", "P21",', '"P20", "P21", "P22",'),  # another drill judged
        (POLICY, '{"DRILL_P21_MODULE"}', '{"DRILL_P21_MODULE", "DRILL_P22_MODULE"}'),
        (
            ADVISORY,
            '    "P21.2": "new memory",\n',
            '    "P21.2": "new memory",\n    "P22.1": "x",\n',
        ),
        (ROUTING, 'drills = ["P21"]\n', 'drills = ["P21", "PT99"]\n\n[p22]\npackage = "drills"\n'),
        (ROUTING, 'drills = ["P20", "P21"]', 'drills = ["P20", "P21", "P22"]'),
        (CATALOGUE, 'title = "other"\n', 'title = "other"\n\n[PT41]\ntitle = "a new case"\n'),
    ],
)
def test_another_drills_row_in_a_registration_table_keeps_the_stamp_fresh(
    repo: Path, table: str, old: str, new: str
) -> None:
    stamp_now(repo)
    path = repo / table
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))

    assert targets(repo)["p20"].fresh(repo)


@pytest.mark.parametrize(
    ("table", "old", "new"),
    [
        (POLICY, '"P20", "P21",', '"P21",'),  # no longer judged
        (ADVISORY, '"P20.3": "new memory"', '"P20.3": "the worker counts its calls"'),
        (ROUTING, 'drills = ["P20"]', 'drills = ["P20", "PT99"]'),
        (ROUTING, 'drills = ["P20", "P21"]', 'drills = ["P21"]'),  # an owner stops naming it
        (POLICY, "MEMORY = 1", "MEMORY = 2"),  # the tables' other rows stay in every digest
        (CATALOGUE, 'title = "append"', 'title = "append in place"'),
        (CATALOGUE, "# the drills", "# the drills, kept once"),
    ],
)
def test_its_own_row_in_a_registration_table_makes_the_stamp_stale(
    repo: Path, table: str, old: str, new: str
) -> None:
    stamp_now(repo)
    path = repo / table
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))

    assert not targets(repo)["p20"].fresh(repo)
