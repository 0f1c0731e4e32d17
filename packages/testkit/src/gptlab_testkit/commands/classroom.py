"""Grade a whole class of attempts into one table: `nox -s grade -- --submissions DIR`.

    python -m gptlab_testkit.grade --submissions DIR [--out OUT] [--shard I/N] [--jobs N]
                                   [--submission-timeout S] [--timeout S]
                                   [--memory-limit MIB] [--workers N] [-- pytest args]
    python -m gptlab_testkit.grade merge OUT A.json B.json ...

Every subfolder of DIR (sorted by name; hidden and `_` ones skipped) is one
submission: a seed-style attempt folder or a set of package files, mapped as
`grade FOLDER` maps them, and graded as `grade FOLDER` grades it (selection, fork
pool, limits). This process imports torch and the references once; each
submission's run is forked from it (the warm start `grade` uses), from the current
directory (the repository root), in a process group of its own, without the
caller's *_MODULE variables, with --timeout, --memory-limit, --workers, --full and
the pytest args applied. A folder where no module maps is a row saying so.
--submission-timeout (default 1800 s, 0: none) stops a submission's whole grading;
a candidate that hangs, dies or fails while imported is a "not graded" row saying why.

Written into OUT (default ./grade-results):
  class.md    the class table: per submission its verdict, points (contract tests
              passed of those graded), wall seconds, per package passed/failed tests,
              the owners its failures were routed to, a one-line note (a submission
              that could not be imported: "not graded", 0 of its expected tests, and
              the cause in one line)
  class.csv   the same table, one column per number
  class.json  everything: settings, and per submission its modules, returncode,
              wall seconds and every test record (the table is computed from it)
  logs/NAME.log   what each submission's grading printed (scorecard, routing)

--shard I/N grades only submissions I, I+N, I+2N, ... (1-based, of the sorted
names), so N machines can each take one slice; `merge` joins the shards' class.json
files into the table one unsharded run writes. --jobs N grades N submissions side
by side (default 1; each uses --workers test processes: on 2 cores, --jobs 2
--workers 1 keeps both busy).

Exit status: 0 when every submission was graded, whatever the verdicts (it is a
class report); 1 when a submission's grading process itself broke (it wrote no
results, ran past --submission-timeout, or pytest reported an internal error);
2 on a usage error, reported before anything is written.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tqdm import tqdm

from gptlab_testkit.candidates import VARIABLES, folder_assignments
from gptlab_testkit.commands.checkout_guard import CheckoutGuard
from gptlab_testkit.commands.gradescope import contract_points
from gptlab_testkit.commands.grading import (
    UsageError,
    grade_run,
    number,
    parse_assignments,
    selection,
)
from gptlab_testkit.commands.grading import parse_options as grade_options
from gptlab_testkit.loading.attempts import SubmissionLinkError, refuse_links
from gptlab_testkit.running.results import TestResult, records_payload, results_from
from gptlab_testkit.running.suites import RUNTIME_PACKAGES, SuiteRun, side_by_side, warm_up

USAGE = __doc__ or ""
DEFAULT_OUT = "grade-results"
PACKAGE_ORDER = (*RUNTIME_PACKAGES, "integration")
PYTEST_INTERNAL_ERROR = 3
# A whole submission's grading, for what the per-test limit cannot stop (a candidate
# that hangs while its module is imported, during collection).
DEFAULT_SUBMISSION_TIMEOUT_S = 1800.0

Status = Literal["graded", "not graded", "broken"]


@dataclass
class Submission:
    """One subfolder's grading: how it went, which modules it swapped in, every test."""

    name: str
    status: Status
    returncode: int | None = None
    modules: dict[str, str] = field(default_factory=dict)
    tests: list[TestResult] = field(default_factory=list)
    note: str = ""  # one line: why it was not graded, or why no test ran
    seconds: float = 0.0  # wall time of its grading process

    @property
    def verdict(self) -> str:
        if self.status != "graded":
            return self.status
        failed = any(test.outcome == "failed" for test in self.tests)
        return "FAIL" if failed or self.returncode else "pass"

    def candidates(self) -> list[str]:
        """Packages whose module is not the reference."""
        return [
            variable.package
            for name, variable in VARIABLES.items()
            if self.modules.get(name, variable.default_module) != variable.default_module
        ]

    def counts(self, package: str) -> Counter[str]:
        return Counter(test.outcome for test in self.tests if test.package == package)

    def owners_hit(self) -> Counter[str]:
        """Owners its failures were routed to (none for a submission that was not graded:
        its tests never ran, so nothing was routed)."""
        if self.status == "not graded":
            return Counter()
        return Counter(test.owner for test in self.tests if test.outcome == "failed")

    def points(self) -> tuple[int, int] | None:
        """(passed, graded) contract tests, as Gradescope counts them; None with no tests."""
        return contract_points(self.tests) if self.tests else None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "verdict": self.verdict,
            "returncode": self.returncode,
            "note": self.note,
            "seconds": round(self.seconds, 2),
            "modules": self.modules,
            "tests": records_payload(self.tests),
        }

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Submission:
        return cls(
            name=row["name"],
            status=row["status"],
            returncode=row["returncode"],
            modules=dict(row["modules"]),
            tests=results_from(row["tests"]),
            note=row["note"],
            seconds=row["seconds"],
        )


# -- choosing the submissions


def submission_folders(root: Path) -> list[Path]:
    """The subfolders of `root`, sorted by name; ValueError naming --submissions if none.

    A link to a folder is listed too: its row says it was refused (never followed)."""
    if not root.is_dir():
        raise ValueError(f"--submissions {root}: no such folder")
    folders = sorted(
        (
            path
            for path in root.iterdir()
            if (path.is_dir() or path.is_symlink()) and not path.name.startswith((".", "_"))
        ),
        key=lambda path: path.name,
    )
    if not folders:
        raise ValueError(f"--submissions {root}: no subfolders (one per submission expected)")
    return folders


def parse_shard(spec: str) -> tuple[int, int]:
    """'I/N' -> (I, N) with 1 <= I <= N."""
    index, slash, count = spec.partition("/")
    if slash and index.strip().isdigit() and count.strip().isdigit():
        i, n = int(index), int(count)
        if 1 <= i <= n:
            return i, n
    raise ValueError(f"--shard must be I/N with 1 <= I <= N (e.g. 1/2), got {spec!r}")


def shard_of(items: Sequence[Path], index: int, count: int) -> list[Path]:
    """The index-th (1-based) of `count` interleaved slices: every name in exactly one."""
    return list(items[index - 1 :: count])


# -- grading one submission


# How a candidate that does not import shows in grade's output: the plugin's session
# exit (serial runs) or the CandidateError a worker's collection reported (xdist).
_CANDIDATE_ERROR_MARKERS = ("candidate error:", "CandidateError:")


def _candidate_error_in_log(log: str) -> str:
    """The candidate error a run printed (its plugin's line), "" when none."""
    for line in (line.strip(" !") for line in log.splitlines()):
        for marker in _CANDIDATE_ERROR_MARKERS:
            if marker in line:
                return line.split(marker, 1)[1].strip()
    return ""


def _note_from_log(log: str, returncode: int) -> str:
    """The last line grade printed, for a run with no tests and no known cause."""
    lines = [line.strip(" !") for line in log.splitlines() if line.strip(" !")]
    return f"no test ran (exit {returncode})" + (f": {lines[-1]}" if lines else "")


def _shown(cause: str, modules: dict[str, str]) -> str:
    """A cause with the submission's own folder left out of its file paths (one line)."""
    folders = {str(Path(spec).parent) + "/" for spec in modules.values() if spec.endswith(".py")}
    for folder in sorted(folders, key=len, reverse=True):
        cause = cause.replace(folder, "")
    return cause.splitlines()[0] if cause else cause


def submission_from(
    name: str, run: SuiteRun, modules: dict[str, str], limit: float | None
) -> Submission:
    """The class row of one finished grading run."""
    if run.problem.startswith("ran past its time limit"):
        note = f"grading {run.problem} (the --submission-timeout or the run's deadline)"
        return Submission(name, "broken", None, modules, run.results, note, run.seconds)
    if run.forfeit:  # every test failed, the note says why (a dead judge, a forged report)
        return Submission(name, "graded", 1, modules, run.results, run.problem, run.seconds)
    cause = run.problem or ("" if run.results else _candidate_error_in_log(run.output))
    if run.not_graded or (cause and not run.results and run.returncode != PYTEST_INTERNAL_ERROR):
        # A candidate that could not be imported: its expected tests, each not run.
        note = _shown(cause, modules)
        return Submission(
            name, "not graded", run.returncode, modules, run.results, note, run.seconds
        )
    if run.returncode == PYTEST_INTERNAL_ERROR or (run.problem and run.returncode not in (0, 1)):
        last = next((line for line in reversed(run.output.splitlines()) if line.strip()), "")
        note = f"grading process broke (exit {run.returncode}): {run.problem or last.strip()}"
        return Submission(name, "broken", run.returncode, modules, note=note, seconds=run.seconds)
    note = "" if run.results else _note_from_log(run.output, run.returncode)
    return Submission(name, "graded", run.returncode, modules, run.results, note, run.seconds)


class PendingSubmission:
    """A submission's grading run, forked from this warm process; poll() gives its row."""

    def __init__(
        self, folder: Path, grade_args: Sequence[str], log_path: Path, limit: float | None
    ) -> None:
        own = list(grade_args[: grade_args.index("--")] if "--" in grade_args else grade_args)
        pytest_args = list(grade_args[grade_args.index("--") + 1 :]) if "--" in grade_args else []
        options = grade_options(own)
        assignments = parse_assignments([str(folder.resolve())])
        paths, ladder = selection(options.root, assignments, options.full)  # grade's checkout
        self.name = folder.name
        self.limit = limit
        self.modules = {
            name: assignments.get(name, variable.default_module)
            for name, variable in VARIABLES.items()
        }
        self.run = grade_run(
            paths, assignments, options, pytest_args, ladder, log=log_path, limit=limit
        )

    def poll(self) -> Submission | None:
        run = self.run.poll()
        return None if run is None else submission_from(self.name, run, self.modules, self.limit)

    def kill(self) -> None:
        self.run.kill()


def grade_submission(
    folder: Path, grade_args: Sequence[str], log_path: Path, limit: float | None = None
) -> Submission | PendingSubmission:
    """Start grading one submission (what `grade FOLDER` does) from this warm process."""
    return PendingSubmission(folder, grade_args, log_path, limit)


def not_graded(folder: Path) -> Submission:
    stems = sorted({f"{stem}.py" for variable in VARIABLES.values() for stem in variable.stems})
    note = "no module named like the seed's files (" + ", ".join(stems) + ")"
    return Submission(folder.name, "not graded", note=note)


Grader = Callable[[Path], Submission | PendingSubmission]


def tampered(submission: Submission, changed: list[str]) -> Submission:
    """A submission that changed the graded checkout: no test of it is credited."""
    shown = ", ".join(changed[:3]) + (f" (+{len(changed) - 3} more)" if len(changed) > 3 else "")
    why = f"the submission changed the graded checkout ({shown}); restored before the next"
    for test in submission.tests:
        test.outcome, test.reason = "failed", why
    submission.note = why
    if submission.status == "graded" and not submission.tests:
        submission.returncode = submission.returncode or 1
    return submission


def grade_all(
    folders: Sequence[Path], grader: Grader, jobs: int, guard: CheckoutGuard | None = None
) -> list[Submission]:
    """Grade every folder (`jobs` side by side) under a progress bar; sorted by name.

    A grader returns the row, or a pending run (`poll()`, `kill()`) that gives it later;
    every run is forked from this one thread (see `suites.side_by_side`). `guard` puts
    the checkout back after each submission and names what it changed (checkout_guard).
    """
    done: list[Submission] = []
    tqdm.monitor_interval = 0  # no monitor thread: runs are forked from this process
    with tqdm(total=len(folders), desc="grading", unit="submission", file=sys.stderr) as bar:
        starts = [lambda folder=folder: grader(folder) for folder in folders]
        for _, submission in side_by_side(starts, jobs):
            changed = guard.restore() if guard is not None else []
            if changed:
                submission = tampered(submission, changed)
            done.append(submission)
            bar.write(f"{submission.name}: {submission.verdict} ({submission.seconds:.0f} s)")
            bar.update()
    return sorted(done, key=lambda submission: submission.name)


# -- the class table


def table_packages(submissions: Iterable[Submission]) -> list[str]:
    """Packages any submission ran tests of, in the slice's order."""
    seen = {test.package for submission in submissions for test in submission.tests}
    return [name for name in PACKAGE_ORDER if name in seen] + sorted(seen - set(PACKAGE_ORDER))


def _owners_cell(submission: Submission) -> str:
    return ", ".join(f"{owner} ({n})" for owner, n in sorted(submission.owners_hit().items()))


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _points_cell(submission: Submission) -> str:
    points = submission.points()
    return "-" if points is None else f"{points[0]}/{points[1]}"


def _seconds_cell(submission: Submission) -> str:
    return f"{submission.seconds:.0f}" if submission.seconds else "-"


def markdown_table(submissions: Sequence[Submission]) -> str:
    packages = table_packages(submissions)
    verdicts = Counter(submission.verdict for submission in submissions)
    summary = ", ".join(f"{n} {verdict}" for verdict, n in sorted(verdicts.items()))
    columns = ["submission", "verdict", "points", "seconds", "candidates", *packages]
    lines = [
        "# Class results",
        "",
        f"{len(submissions)} submissions: {summary or 'none'}.",
        "Points are contract tests passed of those graded (Gradescope's count); seconds its"
        " grading's wall time. Package cells are passed/failed tests (**bold** when any"
        " failed; a submission not graded counts each expected test as failed, not run);"
        " owners are the routing keys of the failures, with their counts.",
        "",
        "| " + " | ".join([*columns, "owners hit", "note"]) + " |",
        "|" + "---|" * (len(columns) + 2),
    ]
    for submission in submissions:
        cells = [_md(submission.name), submission.verdict]
        cells += [_points_cell(submission), _seconds_cell(submission)]
        cells.append(", ".join(submission.candidates()) or "-")
        for package in packages:
            c = submission.counts(package)
            cell = f"{c['passed']}/{c['failed']}" if c else "-"
            cells.append(f"**{cell}**" if c["failed"] else cell)
        cells += [_owners_cell(submission), _md(submission.note)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def csv_table(submissions: Sequence[Submission]) -> str:
    """One row per submission; a package none of its tests ran in has empty cells (not 0)."""
    packages = table_packages(submissions)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["submission", "verdict", "returncode", "points", "max points", "seconds"]
    header += ["candidates"]
    header += [f"{package} {outcome}" for package in packages for outcome in ("passed", "failed")]
    writer.writerow([*header, "owners hit", "note"])
    for submission in submissions:
        row: list[object] = [submission.name, submission.verdict]
        row += ["" if submission.returncode is None else submission.returncode]
        points = submission.points()
        row += ["", ""] if points is None else list(points)
        row += [round(submission.seconds, 2) if submission.seconds else ""]
        row += [" ".join(submission.candidates())]
        for package in packages:
            c = submission.counts(package)
            row += [c["passed"], c["failed"]] if c else ["", ""]
        owners = " ".join(f"{owner}:{n}" for owner, n in sorted(submission.owners_hit().items()))
        writer.writerow([*row, owners, submission.note])
    return out.getvalue()


def class_payload(
    submissions: Sequence[Submission], settings: dict[str, Any], **extra: object
) -> dict[str, Any]:
    return {
        "settings": settings,
        **extra,
        "submissions": [submission.to_json() for submission in submissions],
    }


def write_class(out: Path, submissions: Sequence[Submission], payload: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "class.md").write_text(markdown_table(submissions), encoding="utf-8")
    (out / "class.csv").write_text(csv_table(submissions), encoding="utf-8")
    (out / "class.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


# -- merging shards


def read_shards(paths: Sequence[Path]) -> tuple[list[Submission], dict[str, Any]]:
    """Submissions of every file, sorted; ValueError naming the file on any mismatch.

    Refused: a file that is not a class.json, a submission in two files, shards
    graded with different settings, and a submission a shard's run listed but no
    file holds (a shard left out).
    """
    owner_of: dict[str, Path] = {}
    submissions: list[Submission] = []
    expected: dict[str, Path] = {}
    settings: dict[str, Any] | None = None
    first: Path | None = None
    seen: dict[Path, Path] = {}
    for path in paths:
        if path.resolve() in seen:
            raise ValueError(f"merge: {seen[path.resolve()]} is given twice")
        seen[path.resolve()] = path
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            rows = payload["submissions"]
            file_settings = payload["settings"]
            found = [Submission.from_json(row) for row in rows]
        except FileNotFoundError:
            raise ValueError(f"merge: {path}: no such file") from None
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"merge: {path}: not a class.json ({error!r})") from None
        if settings is None:
            settings, first = file_settings, path
        elif file_settings != settings:
            raise ValueError(
                f"merge: {path} was graded with other settings than {first}: "
                f"{file_settings} != {settings}"
            )
        for submission in found:
            if submission.name in owner_of:
                raise ValueError(
                    f"merge: {path}: submission {submission.name!r} is also in "
                    f"{owner_of[submission.name]}"
                )
            owner_of[submission.name] = path
        submissions += found
        for name in payload.get("shard", {}).get("submissions", []):
            expected.setdefault(name, path)
    missing = sorted(set(expected) - set(owner_of))
    if missing:
        raise ValueError(
            f"merge: submissions {missing} were sharded (see {expected[missing[0]]}) but no "
            "file given holds them: is a shard's class.json missing?"
        )
    return sorted(submissions, key=lambda submission: submission.name), settings or {}


# -- command line


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="grade --submissions", add_help=False)
    parser.add_argument("--submissions", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path(DEFAULT_OUT))
    parser.add_argument("--shard")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--submission-timeout", type=number, default=DEFAULT_SUBMISSION_TIMEOUT_S)
    # Passed through to each `grade`, only when given: grade keeps the defaults.
    parser.add_argument("--timeout", type=number)  # finite: NaN would disable the limit
    parser.add_argument("--memory-limit", type=int)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--full", action="store_true")
    try:
        options = parser.parse_args(argv)
    except SystemExit:  # argparse has printed what was wrong
        raise ValueError(
            "see `python -m gptlab_testkit.commands.classroom` for the class options"
        ) from None
    if options.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {options.jobs}")
    if options.submission_timeout < 0:
        limit = options.submission_timeout
        raise ValueError(f"--submission-timeout must be >= 0 seconds (0: none), got {limit:g}")
    if options.out.exists() and not options.out.is_dir():
        raise ValueError(f"--out {options.out}: exists and is not a folder")
    return options


def _passed_through(options: argparse.Namespace, pytest_args: list[str]) -> list[str]:
    args: list[str] = []
    if options.timeout is not None:
        args += ["--timeout", f"{options.timeout:g}"]
    if options.memory_limit is not None:
        args += ["--memory-limit", str(options.memory_limit)]
    if options.workers is not None:
        args += ["--workers", str(options.workers)]
    if options.full:
        args += ["--full"]
    return [*args, "--", *pytest_args] if pytest_args else args


def _check_grade_options(grade_args: list[str]) -> None:
    """The passed-through options, checked by grade's own rules before any grading."""
    own = grade_args[: grade_args.index("--")] if "--" in grade_args else grade_args
    try:
        grade_options(own)
    except UsageError as error:
        raise ValueError(str(error)) from None


def grade_class(argv: list[str], pytest_args: list[str]) -> int:
    options = _options(argv)
    grade_args = _passed_through(options, pytest_args)
    _check_grade_options(grade_args)
    folders = submission_folders(options.submissions)
    payload_extra: dict[str, object] = {}
    if options.shard is not None:
        index, count = parse_shard(options.shard)
        names = [folder.name for folder in folders]
        folders = shard_of(folders, index, count)
        payload_extra["shard"] = {"index": index, "count": count, "submissions": names}
    settings = {"grade_args": grade_args}
    logs = options.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def grader(folder: Path) -> Submission | PendingSubmission:
        try:
            refuse_links(folder)  # before anything of it is read (never followed)
        except SubmissionLinkError as error:
            return Submission(folder.name, "not graded", note=f"refused: {error}")
        if not folder_assignments(folder):
            return not_graded(folder)
        limit = options.submission_timeout or None
        return grade_submission(folder, grade_args, logs / f"{folder.name}.log", limit)

    warm_up()  # once: every submission's run is forked from here
    guard = CheckoutGuard(Path.cwd()) if (Path.cwd() / "packages").is_dir() else None
    submissions = grade_all(folders, grader, options.jobs, guard)
    write_class(options.out, submissions, class_payload(submissions, settings, **payload_extra))
    print(f"class table: {options.out / 'class.md'} ({len(submissions)} submissions)")
    return 1 if any(submission.status == "broken" for submission in submissions) else 0


def merge(argv: list[str], pytest_args: list[str]) -> int:
    if pytest_args:
        raise ValueError("merge takes no pytest args (nothing is graded)")
    if len(argv) < 2:
        raise ValueError("usage: merge OUT_DIR A.json [B.json ...]")
    out, paths = Path(argv[0]), [Path(arg) for arg in argv[1:]]
    if out.exists() and not out.is_dir():
        raise ValueError(f"merge: OUT_DIR {out}: exists and is not a folder")
    submissions, settings = read_shards(paths)
    write_class(out, submissions, class_payload(submissions, settings))
    print(f"class table: {out / 'class.md'} ({len(submissions)} submissions)")
    return 0


def main(argv: list[str], pytest_args: list[str]) -> int:
    """Entry from `grade`: `merge OUT A.json ...` or `--submissions DIR ...`."""
    try:
        if argv and argv[0] == "merge":
            return merge(argv[1:], pytest_args)
        return grade_class(argv, pytest_args)
    except ValueError as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    if len(sys.argv) < 2 or {"-h", "--help"} & set(sys.argv):
        print(USAGE)
        raise SystemExit(0)
    own, pytest_args = sys.argv[1:], []
    if "--" in own:
        own, pytest_args = own[: own.index("--")], own[own.index("--") + 1 :]
    raise SystemExit(main(own, pytest_args))
