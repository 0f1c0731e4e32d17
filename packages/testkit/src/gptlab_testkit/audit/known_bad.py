"""`nox -s known_bad`: prove the ladder catches every known-bad candidate.

    python -m gptlab_testkit.known_bad integration_tests/known_bad [-k SUBSTRING]
                                       [--faithful DIR] [--jobs N] [--min-catches N]
                                       [--full-counts] [--all]

Each `bad_*.py` in the folder declares the variable it is swapped in through and
the owner the ladder must route it to:

    \"\"\"Blocks kept in a plain Python list.\"\"\"
    VARIABLE = "TINY_GPT_MODULE"
    EXPECTED_OWNER = "registration"

Every candidate is graded exactly as `grade` grades it, selection on: the contract
tests of every test file that loads its variable (its package's suite, the suites
that use it as a collaborator, the integration slice), run under grade's isolation
(fork pool, per-test time limit, memory limit, stop list, scratch directory). So
the ladder proves that selection drops no test that catches a candidate. A
candidate whose mistake breaks one of this project's extensions rather than
docs/contracts.md declares `SCOPE = "all"` and is graded on extension tests too. A
hostile candidate (one that hangs, ends its process, aborts, segfaults or allocates
without bound) declares `RUN = "isolated"` and gets a 20 s per-test limit.

A candidate is caught when its run fails, at least one failure is routed to
EXPECTED_OWNER, and at least `--min-catches` tests of its graded scope fail
(default MIN_CATCHES = 3; `--min-catches 0` reports the counts without enforcing
them): one test alone that catches a mistake is one edit away from catching
nothing. A candidate's run stops as soon as that is so (its own package's tests
run first), so the table's counts read "3+" for a run that stopped there;
`--full-counts` runs every selected test and counts every catch. Stopping early
cannot change a verdict: the condition only grows as tests fail. Last, the
references run every test that caught a candidate, and must pass each: a catch is
a test the reference passes. Prints a table (tests failed, catches, owners hit,
verdict), the candidates with the fewest catches, and `known-bad caught: N/M`.

Every run is forked from this one process after torch and the references are
imported (`suites.warm_up`), `--jobs` at a time (default: CPU count).

`--faithful DIR` holds candidates that must pass: `good_*.py` files and seed-style
attempt folders (every module the folder maps, graded together), each on the
contract tests selection picks for its variables.

**Clause mutants.** A candidate that breaks one numbered contract clause alone declares
it (`CLAUSE = "M02.7"`), and `--clause-mutants DIR` turns each `[[mutant]]` of a drill's
`DIR/<id>.toml` into such a candidate (the drill's reference with exact text edits:
`clause`, `mistake`, `replace = [[old, new], ...]`, optional `within` and `module`). A
clause candidate is caught only by tests whose own check failed (an AssertionError or
pytest's Failed: an oracle comparison or a documented-error check), never by an
exception escaping from the code under test; it needs one such catch, a `semantics`
clause two (`clauses.SEMANTIC_CATCHES`), and runs every test of its own package's suite.
`--clause-readme README` (repeatable) names the READMEs whose graded clauses must each
have a clause candidate; the report lists clause, mutant and catches per item. The
coverage check always reads every drill's file.

**Stamps: only what changed is proved again.** A target is one package's or drill's share
(its known-bad candidates, faithful candidates and clause mutants; an attempt folder graded
on several packages is a target of its own). A target all of whose candidates held in one
run gets a stamp, `<known-bad folder>/stamps/<target>.stamp`: a digest of everything its
verdict depends on (`known_bad_stamps`: its fixtures and the files they read, its suites,
its references, its README clause lines, the testkit's sources, the pytest settings,
torch's version and the options that decide a verdict). A run grades only the targets whose
stamp is stale or missing and prints one line for the rest; `--all` grades (and stamps)
every target; `-k` grades every candidate it names, stamped or not, and stamps the targets
it graded wholly. A target that fails gets no stamp.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gptlab_testkit.audit import known_bad_stamps as stamps
from gptlab_testkit.candidates import VARIABLES, folder_assignments
from gptlab_testkit.clauses import Clause, clause_order, readme_clauses
from gptlab_testkit.running.owners import OWNERS
from gptlab_testkit.running.plugin import DEFAULT_TIMEOUT_S
from gptlab_testkit.running.reporting import table
from gptlab_testkit.running.results import NOT_RUN, TestResult, package_of
from gptlab_testkit.running.scoring import advisory_outcome
from gptlab_testkit.running.suites import (
    ForkedRun,
    SuiteRun,
    grading_args,
    preload,
    selected_files,
    side_by_side,
    warm_up,
)

_QUIET_ARGS = ("-q", "--tb=no", "--no-header")
SCOPES = {"contract": ("-m", "contract", *_QUIET_ARGS), "all": _QUIET_ARGS}
# Hostile candidates: a short limit keeps the ladder quick; honest tests take seconds.
ISOLATED_TIMEOUT_S = 20.0
MEMORY_MIB = 4096
TIMEOUTS = {"in-process": DEFAULT_TIMEOUT_S, "isolated": ISOLATED_TIMEOUT_S}
RUNS = tuple(TIMEOUTS)
# Each known-bad candidate must fail at least this many tests of its graded scope.
MIN_CATCHES = 3
# ... and a drill's candidate this many (a drill's whole suite is a dozen tests or so).
DRILL_MIN_CATCHES = 2
# With --per-drill, every drill needs this many known-bad and faithful candidates.
DRILL_KNOWN_BAD, DRILL_FAITHFUL = 2, 1
# A run that takes longer than this is stopped (a candidate hanging while imported).
RUN_LIMIT_S = 900.0
# A test's own check failed: the catches a clause mutant may count.
CHECK_FAILURES = frozenset({"AssertionError", "Failed"})


@dataclass(frozen=True)
class KnownBad:
    path: Path
    mistake: str
    variable: str
    expected_owner: str
    scope: str = "contract"
    run: str = "in-process"
    clause: str = ""  # the one numbered clause it breaks (a clause mutant), else ""
    source: Path | None = None  # the file it was written from (a clause mutant's .toml)

    @property
    def fixture(self) -> Path:
        """The file of this project's that holds it: itself, or its clause-mutant file."""
        return self.source or self.path

    @property
    def suite(self) -> Path:
        return VARIABLES[self.variable].suite

    def floor(self, min_catches: int) -> int:
        """Tests it must fail: a drill's suite is one screen of tests, so its floor is
        DRILL_MIN_CATCHES (never above the mechanisms' --min-catches)."""
        if VARIABLES[self.variable].is_drill:
            return min(min_catches, DRILL_MIN_CATCHES)
        return min_catches


def _manifest(path: Path) -> dict[str, str]:
    """The module constants and first docstring line, read without importing the candidate."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    constants[target.id] = node.value.value
    docstring = (ast.get_docstring(tree) or "").strip().splitlines()
    if not docstring:
        raise ValueError(f"{path.name}: the docstring's first line must say what it is")
    variable = constants.get("VARIABLE", "")
    if variable not in VARIABLES:
        raise ValueError(
            f"{path.name}: VARIABLE must be one of {sorted(VARIABLES)}, got {variable!r}"
        )
    return {**constants, "variable": variable, "mistake": docstring[0]}


def read_known_bad(path: Path) -> KnownBad:
    """Read the declaration without importing the candidate."""
    manifest = _manifest(path)
    owner = manifest.get("EXPECTED_OWNER", "")
    if owner not in OWNERS:
        raise ValueError(f"{path.name}: EXPECTED_OWNER {owner!r} is not a routing.toml key")
    scope = manifest.get("SCOPE", "contract")
    if scope not in SCOPES:
        raise ValueError(f"{path.name}: SCOPE must be one of {sorted(SCOPES)}, got {scope!r}")
    run = manifest.get("RUN", "in-process")
    if run not in RUNS:
        raise ValueError(f"{path.name}: RUN must be one of {sorted(RUNS)}, got {run!r}")
    clause = manifest.get("CLAUSE", "")
    return KnownBad(path, manifest["mistake"], manifest["variable"], owner, scope, run, clause)


def _clause_candidate_source(variable: str, owner: str, mutant: dict, module: str) -> str:
    """A known-bad candidate file: the reference `module` with the mutant's text edits."""
    replace = [(str(old), str(new)) for old, new in mutant["replace"]]
    within = mutant.get("within")
    return (
        f"{mutant['mistake']!r}\n\n"
        "from gptlab_testkit.mutants import export_with, mutated_module\n\n"
        f"VARIABLE = {variable!r}\nEXPECTED_OWNER = {owner!r}\nCLAUSE = {mutant['clause']!r}\n\n"
        f"_mutant = mutated_module({module!r}, {replace!r}, within={within!r})\n"
        f"globals().update(export_with({module!r}, _mutant))\n"
    )


def clause_mutant_candidates(folder: Path, scratch: Path) -> list[KnownBad]:
    """Every `[[mutant]]` of `folder/<drill id>.toml`, written as a candidate into `scratch`."""
    import tomllib

    from gptlab_testkit.candidates import drill_catalogue

    drills = drill_catalogue()
    candidates: list[KnownBad] = []
    for path in sorted(folder.glob("*.toml")):
        drill = drills.get(path.stem.upper())
        if drill is None:
            raise ValueError(f"{path}: {path.stem!r} is not a drill id")
        mutants = tomllib.loads(path.read_text(encoding="utf-8")).get("mutant", [])
        for number, mutant in enumerate(mutants, 1):
            missing = {"clause", "mistake", "replace"} - set(mutant)
            if missing:
                raise ValueError(f"{path.name} mutant {number} lacks {sorted(missing)}")
            module = str(mutant.get("module", f"gptlab_drills.{path.stem}"))
            name = f"bad_{path.stem}_clause_{mutant['clause'].replace('.', '_')}_{number}.py"
            source = _clause_candidate_source(drill.variable, path.stem, mutant, module)
            (scratch / name).write_text(source, encoding="utf-8")
            candidates.append(replace(read_known_bad(scratch / name), source=path))
    return candidates


@dataclass
class Verdict:
    candidate: KnownBad
    run: SuiteRun
    min_catches: int = MIN_CATCHES

    @property
    def failed(self) -> int:
        return sum(really_failed(result) for result in self.run.results)

    @property
    def catches(self) -> int:
        """Failed tests of the graded scope: contract tests (or every test, SCOPE all)."""
        return len(self.catching())

    @property
    def routed(self) -> bool:
        return self.run.returncode == 1 and self.candidate.expected_owner in self.owners

    @property
    def owners(self) -> set[str]:
        return {result.owner for result in self.run.results if really_failed(result)}

    @property
    def caught(self) -> bool:
        return self.routed and self.catches >= self.min_catches

    @property
    def stopped(self) -> bool:
        """The run stopped once the verdict was settled (some tests were not run)."""
        return any(result.reason == NOT_RUN for result in self.run.results)

    def count(self, number: int) -> str:
        return f"{number}+" if self.stopped else str(number)

    def catching(self) -> list[str]:
        """The node ids of the tests that caught the candidate (see `catches`); a clause
        mutant's only where the test's own check failed (CHECK_FAILURES)."""
        return [
            result.nodeid
            for result in self.run.results
            if really_failed(result)
            and (self.candidate.scope == "all" or result.kind == "contract")
            and (not self.candidate.clause or result.error in CHECK_FAILURES)
        ]

    @property
    def label(self) -> str:
        if self.caught:
            return "caught"
        if self.routed:
            return f"TOO FEW CATCHES ({self.catches} < {self.min_catches})"
        if self.run.problem:
            return f"ERROR ({self.run.problem})"
        if self.run.returncode not in (0, 1):
            return f"ERROR (pytest exit {self.run.returncode})"
        if self.run.returncode == 0:
            return "MISSED (suite passed)"
        return "MISROUTED"


def really_failed(result: TestResult) -> bool:
    """A catch is a real failure: a held rejection (it passed) is none; an advisory test
    that failed is one here, since a known-bad candidate is this project's own fixture,
    whose worker reports honestly (a submission's advisory result is never scored)."""
    if result.outcome == "failed":
        return not result.held
    return advisory_outcome(result) == "failed"


@dataclass(frozen=True)
class Faithful:
    """A stranger's faithful implementation: it must pass its contract suites and the slice."""

    path: Path
    modules: dict[str, Path]  # variable -> file (one for a good_*.py, several for a folder)

    @property
    def env(self) -> dict[str, str]:
        return {variable: str(path.resolve()) for variable, path in self.modules.items()}

    @property
    def edits_reference(self) -> bool:
        """Built as an edit of the reference (`gptlab_testkit.mutants`), as the known-bad
        fixtures are: its worker, like theirs, may import the project (`judge.policy.trusted`)."""
        return any(
            "gptlab_testkit.mutants" in path.read_text(encoding="utf-8")
            for path in self.modules.values()
        )


def read_faithful(path: Path) -> Faithful:
    """A good_*.py file (declaring VARIABLE) or a seed-style attempt folder."""
    if path.is_dir():
        modules = folder_assignments(path)
        if not modules:
            raise ValueError(f"{path}: faithful folder maps no module (see folder_assignments)")
        return Faithful(path, modules)
    return Faithful(path, {_manifest(path)["variable"]: path})


def faithful_candidates(folder: Path | None, only: str = "") -> list[Faithful]:
    if folder is None:
        return []
    paths = sorted(folder.glob("good_*.py")) + sorted(
        path for path in folder.iterdir() if path.is_dir() and not path.name.startswith((".", "_"))
    )
    return [read_faithful(path) for path in paths if only in path.stem]


Start = Callable[[], ForkedRun]


def _run(
    paths: list[str],
    env: dict[str, str],
    scope: str,
    run: str,
    limit: float | None = RUN_LIMIT_S,
    extra: tuple[str, ...] = (),
    trusted: bool = False,
) -> Start:
    args = [*SCOPES[scope], *grading_args(TIMEOUTS[run], MEMORY_MIB, workers=1), *extra]
    env = {**env, **judging(run, trusted)}
    return lambda: ForkedRun(paths, env, args, import_limit=TIMEOUTS[run] + 60.0, limit=limit)


# "default": judge mode as `grade` sets it; "all" (`--judge`): as `grade --judge` does,
# every candidate in a worker (how a variable is proved ready for judge.JUDGED).
JUDGE_MODE = {"mode": "default"}


def judging(run: str, trusted: bool) -> dict[str, str]:
    """Judge mode as `grade` sets it (the judged variables' candidates run in a worker).
    A known-bad candidate is this project's own fixture, often the reference with one
    edit: its worker may import the project's packages (`judge.policy.trusted`)."""
    return {
        "GPTLAB_JUDGE": JUDGE_MODE["mode"],
        "GPTLAB_JUDGE_TIMEOUT": f"{TIMEOUTS[run]:g}",
        "GPTLAB_JUDGE_MEMORY_MIB": str(MEMORY_MIB),
        "GPTLAB_JUDGE_TRUSTED": "1" if trusted else "",
    }


def own_suite_first(files: list[str], candidate: KnownBad) -> list[str]:
    """The candidate's own package's tests first: a stopping run is settled soonest."""
    own = VARIABLES[candidate.variable].package
    return sorted(files, key=lambda file: package_of(Path(file)) != own)


def short_drills(
    candidates: list[KnownBad], faithful: list[Faithful]
) -> list[tuple[str, int, int]]:
    """(drill, known-bad, faithful) for each drill with fewer than DRILL_KNOWN_BAD known-bad
    or DRILL_FAITHFUL faithful candidates."""
    counts = [
        (
            variable.package,
            sum(candidate.variable == name for candidate in candidates),
            sum(name in candidate.modules for candidate in faithful),
        )
        for name, variable in VARIABLES.items()
        if variable.is_drill
    ]
    return [
        (d, bad, good) for d, bad, good in counts if bad < DRILL_KNOWN_BAD or good < DRILL_FAITHFUL
    ]


def drill_coverage(candidates: list[KnownBad], faithful: list[Faithful]) -> list[str]:
    """Drills with fewer than DRILL_KNOWN_BAD known-bad or DRILL_FAITHFUL faithful candidates."""
    return [
        f"drill {drill}: {bad} known-bad (need {DRILL_KNOWN_BAD}), "
        f"{good} faithful (need {DRILL_FAITHFUL})"
        for drill, bad, good in short_drills(candidates, faithful)
    ]


def clause_floor(candidate: KnownBad, clauses: dict[str, Clause], min_catches: int) -> int:
    """A clause mutant's floor: its clause's (1, a semantic clause 2); others' as before."""
    if candidate.clause:
        clause = clauses.get(candidate.clause)
        return clause.catches_needed if clause is not None else 1
    return candidate.floor(min_catches)


def clause_coverage(candidates: list[KnownBad], clauses: dict[str, Clause]) -> list[str]:
    """Graded clauses without a clause candidate, and candidates naming unknown clauses."""
    named = {candidate.clause for candidate in candidates if candidate.clause}
    problems = [
        f"clause {clause.id} ({clause.kind}) has no one-clause mutant"
        for clause in clauses.values()
        if clause.graded and clause.id not in named
    ]
    problems += [
        f"{candidate.path.name}: CLAUSE {candidate.clause!r} is not a clause of "
        "the --clause-readme files"
        for candidate in candidates
        if candidate.clause and clauses and candidate.clause not in clauses
    ]
    return problems


def clause_rows(verdicts: list[Verdict]) -> list[tuple[object, ...]]:
    """clause, mutant, catches, verdict: one row per clause mutant, by clause."""
    rows = [
        (v.candidate.clause, v.candidate.mistake[:70], v.catches, v.label)
        for v in verdicts
        if v.candidate.clause
    ]
    return sorted(rows, key=lambda row: clause_order(str(row[0])))


def reference_shares(nodeids: set[str], jobs: int) -> list[list[str]]:
    """The catching tests' functions, grouped by file into at most `jobs` shares.

    A function runs with all its parameters: a parameter id may name something of the
    candidate's (a fixture parametrized over the variants it ships).
    """
    by_file: dict[str, list[str]] = {}
    for function in sorted({nodeid.split("[", 1)[0] for nodeid in nodeids}):
        by_file.setdefault(function.split("::", 1)[0], []).append(function)
    shares: list[list[str]] = [[] for _ in range(max(1, min(jobs, len(by_file))))]
    for tests in sorted(by_file.values(), key=len, reverse=True):
        min(shares, key=len).extend(tests)
    return [share for share in shares if share]


def reference_checks(root: Path, shares: list[list[str]]) -> list[tuple[str, Start, int]]:
    """The references on every catching test function, one run per share, side by side."""
    return [
        (
            f"references on {len(share)} catching test functions",
            _run([str(root / test) for test in share], {}, "all", "in-process"),
            0,
        )
        for share in shares
    ]


def _stop_option(candidate: KnownBad, min_catches: int) -> str:
    return f"--gptlab-stop-once-caught={candidate.expected_owner}:{max(1, min_catches)}"


def _run_all(jobs: list[tuple[str, Start, int]], workers: int) -> dict[int, SuiteRun]:
    """Run (name, start, size) jobs `workers` at a time, largest first; results by index."""
    # Largest first, so the last runs to end are short ones.
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i][2])
    runs: dict[int, SuiteRun] = {}
    for position, run in side_by_side([jobs[i][1] for i in order], workers):
        runs[order[position]] = run
        print(f"  done in {run.seconds:5.1f} s: {jobs[order[position]][0]}", flush=True)
    return runs


# -- targets: what a stamp covers (see known_bad_stamps)


def target_of(member: KnownBad | Faithful) -> str:
    """The package or drill a candidate proves (an attempt folder of several: its name)."""
    if isinstance(member, KnownBad):
        return VARIABLES[member.variable].package
    if len(member.modules) == 1:
        return VARIABLES[next(iter(member.modules))].package
    return member.path.name


def stamp_member(member: KnownBad | Faithful) -> stamps.Member:
    """A candidate as its target's stamp sees it."""
    if isinstance(member, KnownBad):
        own = member.source is None  # a bad_*.py file of a known-bad folder
        return stamps.Member(target_of(member), member.fixture, (member.variable,), own)
    return stamps.Member(target_of(member), member.path, tuple(member.modules), False)


def uncovered_targets(
    candidates: list[KnownBad],
    faithful: list[Faithful],
    clauses: dict[str, Clause],
    per_drill: bool,
) -> set[str]:
    """Targets a coverage problem names (drill_coverage, clause_coverage): never stamped."""
    short = {drill for drill, _, _ in short_drills(candidates, faithful)} if per_drill else set()
    named = {candidate.clause for candidate in candidates if candidate.clause}
    short |= {stamps.clause_target(c) for c in clauses.values() if c.graded and c.id not in named}
    short |= {
        target_of(candidate)
        for candidate in candidates
        if candidate.clause and clauses and candidate.clause not in clauses
    }
    return short


def _passed(run: SuiteRun) -> bool:
    return run.returncode == 0 and not run.problem


def failed_targets(
    faithful_runs: list[tuple[Faithful, SuiteRun]],
    failing: list[Verdict],
    verdicts: list[Verdict],
    share_runs: list[tuple[list[str], SuiteRun]],
) -> set[str]:
    """Targets with a failing faithful candidate, an uncaught one, or a catching test the
    references failed (in a share of reference checks that failed)."""
    failed = {target_of(good) for good, run in faithful_runs if not _passed(run)}
    failed |= {target_of(verdict.candidate) for verdict in failing}
    for share, run in share_runs:
        if not _passed(run):
            failed |= {
                target_of(v.candidate)
                for v in verdicts
                if {nodeid.split("[", 1)[0] for nodeid in v.catching()} & set(share)
            }
    return failed


def wholly_graded(
    members: list[KnownBad | Faithful], graded: list[KnownBad | Faithful]
) -> set[str]:
    """Targets every member of which was graded in this run (`-k p20` grades all of P20's;
    a narrower `-k` stamps nothing it left out)."""
    ran = {member.path for member in graded}
    left = {target_of(member) for member in members if member.path not in ran}
    return {target_of(member) for member in graded} - left


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="known_bad", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "folders", type=Path, nargs="+", metavar="folder", help="folders of bad_*.py candidates"
    )
    parser.add_argument(
        "--faithful",
        type=Path,
        action="append",
        default=[],
        help="folder of good_*.py faithful candidates that must pass (repeatable)",
    )
    parser.add_argument(
        "--per-drill",
        action="store_true",
        help=f"every drill needs {DRILL_KNOWN_BAD} known-bad and {DRILL_FAITHFUL} faithful "
        "candidates (graded with -k too)",
    )
    parser.add_argument(
        "--clause-mutants",
        type=Path,
        action="append",
        default=[],
        help="folder of <drill id>.toml one-clause mutants (repeatable)",
    )
    parser.add_argument(
        "--clause-readme",
        type=Path,
        action="append",
        default=[],
        help="README whose graded clauses each need a clause mutant (repeatable)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="grade every target, stamped ones too (and stamp those that hold)",
    )
    parser.add_argument(
        "--judge",
        action="store_true",
        help="run every candidate in a judge's worker, as grade --judge does",
    )
    parser.add_argument(
        "-k",
        dest="only",
        default="",
        help="grade only names containing this (stamped or not)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--min-catches",
        type=int,
        default=MIN_CATCHES,
        help=f"tests each candidate must fail (default {MIN_CATCHES}; 0: none)",
    )
    parser.add_argument(
        "--full-counts",
        action="store_true",
        help="run every selected test of each candidate (default: stop once it is caught)",
    )
    parser.add_argument(
        "--floor",
        choices=("enforce", "report"),
        default="enforce",
        help="enforce: a candidate below --min-catches fails the run (default); report: it "
        "is listed as a warning",
    )
    args = parser.parse_args(argv)
    JUDGE_MODE["mode"] = "all" if args.judge else "default"
    root = Path.cwd()

    every = [
        read_known_bad(path)
        for path in sorted(p for folder in args.folders for p in folder.glob("bad_*.py"))
    ]
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="gptlab-clause-mutants-"))
    for folder in args.clause_mutants:
        every += clause_mutant_candidates(folder, scratch)
    clauses: dict[str, Clause] = {}
    for readme in args.clause_readme:
        clauses.update(readme_clauses(readme))
    if not every:
        print(f"known_bad: no bad_*.py candidates in {args.folders}", file=sys.stderr)
        return 2
    every_faithful = [c for folder in args.faithful for c in faithful_candidates(folder)]
    members: list[KnownBad | Faithful] = [*every, *every_faithful]
    # Counted over every candidate, so -k and the stamps narrow what is graded, not what
    # is required.
    coverage = drill_coverage(every, every_faithful) if args.per_drill else []
    coverage += clause_coverage(every, clauses)

    started = time.perf_counter()
    facts = stamps.verdict_facts(root, JUDGE_MODE["mode"], args.min_catches, args.floor)
    targets = stamps.ladder_targets(
        root, [stamp_member(m) for m in members], args.folders, args.faithful, facts, clauses
    )
    # Taken before grading: a file edited while the run goes leaves its target stale.
    digests = {name: target.digest(root) for name, target in targets.items()}
    if args.only:  # what it names, stamped or not
        selected = [m for m in members if args.only in m.path.stem]
    else:
        chosen = {n for n, t in targets.items() if args.all or t.recorded() != digests[n]}
        selected = [m for m in members if target_of(m) in chosen]
        skipped = [target for name, target in targets.items() if name not in chosen]
        if skipped:
            print(f"{stamps.skipped_line(skipped)} ({time.perf_counter() - started:.0f} s)")
    candidates = [m for m in selected if isinstance(m, KnownBad)]
    faithful = [m for m in selected if isinstance(m, Faithful)]
    if args.only and not selected:
        print(f"known_bad: no candidate name contains {args.only!r}", file=sys.stderr)
        return 2
    if not selected:
        print("known_bad: nothing to grade (every target is proved and unchanged)")
        return _finish(_coverage_report(args, clauses, coverage))

    warm_up()
    preload(sorted({c.variable for c in candidates} | {v for g in faithful for v in g.modules}))
    must_pass: list[tuple[str, Start, int]] = []
    for good in faithful:
        files = selected_files(root, set(good.modules))
        start = _run(files, good.env, "contract", "in-process", trusted=good.edits_reference)
        must_pass.append((f"faithful {good.path.name} on {len(files)} files", start, len(files)))
    must_fail: list[tuple[KnownBad, Start, int]] = []
    for candidate in candidates:
        files = own_suite_first(selected_files(root, {candidate.variable}), candidate)
        if candidate.clause:  # a clause is its own package's: proved by that suite alone
            own = VARIABLES[candidate.variable].package
            files = [file for file in files if package_of(Path(file)) == own] or files
        env = {candidate.variable: str(candidate.path.resolve())}
        # A clause mutant counts only some failures: it runs every selected test.
        stop = (
            ()
            if args.full_counts or candidate.clause
            else (_stop_option(candidate, candidate.floor(args.min_catches)),)
        )
        start = _run(files, env, candidate.scope, candidate.run, extra=stop, trusted=True)
        must_fail.append((candidate, start, len(files)))

    jobs: list[tuple[str, Start, int]] = [(label, s, n) for label, s, n in must_pass]
    jobs += [(c.path.stem, s, n) for c, s, n in must_fail]
    runs = _run_all(jobs, args.jobs)
    verdicts = [
        Verdict(
            candidate,
            runs[len(must_pass) + index],
            clause_floor(candidate, clauses, args.min_catches),
        )
        for index, (candidate, _, _) in enumerate(must_fail)
    ]
    # Last, the references on every test that caught something.
    catching = {nodeid for verdict in verdicts for nodeid in verdict.catching()}
    shares = reference_shares(catching, args.jobs)
    checks = reference_checks(root, shares)
    check_runs = _run_all(checks, args.jobs)
    passing = [(label, runs[index]) for index, (label, _, _) in enumerate(must_pass)]
    passing += [(label, check_runs[index]) for index, (label, _, _) in enumerate(checks)]

    problems: list[str] = []
    print("\nmust pass:")
    for label, run in passing:
        status = "pass" if _passed(run) else f"FAIL (exit {run.returncode})"
        print(f"  {status:<22} {label}")
        if status != "pass":
            problems.append(f"{label} must pass: {run.problem}\n{run.output[-3000:]}")
    below = [v for v in verdicts if v.routed and v.catches < v.min_catches]
    rows = [
        (
            v.candidate.path.stem.removeprefix("bad_"),
            v.candidate.expected_owner,
            v.candidate.scope,
            v.count(v.failed),
            v.count(v.catches),
            ", ".join(sorted(v.owners)) or "-",
            v.label,
        )
        for v in verdicts
    ]
    print()
    headers = (
        "candidate", "expected owner", "graded on", "tests failed", "catches", "owners hit",
        "verdict",
    )  # fmt: skip
    for line in table(headers, rows):
        print(line)
    failing = [
        verdict
        for verdict in verdicts
        if not verdict.caught and not (args.floor == "report" and verdict in below)
    ]
    for verdict in failing:
        problems.append(
            f"{verdict.candidate.path.name} ({verdict.candidate.mistake}) was not caught"
            f" with selection on: {verdict.label}\n{verdict.run.output[-2000:]}"
        )
    if any(v.candidate.clause for v in verdicts):
        print("\nclause mutants (catches: tests whose own check failed):")
        for line in table(("clause", "mutant", "catches", "verdict"), clause_rows(verdicts)):
            print(f"  {line}")
    fewest = sorted(verdicts, key=lambda v: (v.catches, v.candidate.path.stem))[:8]
    print("\nfewest catches: " + ", ".join(f"{v.candidate.path.stem} {v.catches}" for v in fewest))
    drill_floor = min(args.min_catches, DRILL_MIN_CATCHES)
    rule = f"each must fail >= {args.min_catches} tests (a drill's >= {drill_floor}), " + (
        "enforced" if args.floor == "enforce" else "reported only"
    )
    if below:
        names = ", ".join(f"{v.candidate.path.stem} ({v.catches})" for v in below)
        print(f"below their floor of catches: {names}")
    caught = (
        sum(v.routed for v in verdicts)
        if args.floor == "report"
        else sum(v.caught for v in verdicts)
    )
    elapsed = time.perf_counter() - started
    print(f"known-bad caught: {caught}/{len(verdicts)} ({rule})  ({elapsed:.0f} s)")
    if faithful:
        print(f"faithful candidates graded: {len(faithful)} (each must pass)")
    problems += _coverage_report(args, clauses, coverage)
    failed = failed_targets(
        [(good, runs[index]) for index, good in enumerate(faithful)],
        failing,
        verdicts,
        [(share, check_runs[index]) for index, share in enumerate(shares)],
    )
    failed |= uncovered_targets(every, every_faithful, clauses, args.per_drill)
    held = sorted(wholly_graded(members, selected) - failed)
    for name in held:
        stamps.write_stamp(targets[name], digests[name])
    if held:
        print(f"stamps written: {len(held)} ({', '.join(held)})")
    return _finish(problems)


def _coverage_report(
    args: argparse.Namespace, clauses: dict[str, Clause], coverage: list[str]
) -> list[str]:
    if args.per_drill or clauses:
        print(f"drills or clauses without enough candidates: {len(coverage)}")
        return list(coverage)
    return []


def _finish(problems: list[str]) -> int:
    for problem in problems:
        print(f"\n{problem}", file=sys.stderr)
    return 0 if not problems else 1


def run() -> None:
    """The command."""
    raise SystemExit(main(sys.argv[1:]))
