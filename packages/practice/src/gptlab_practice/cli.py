"""gptlab-practice: timed blank-editor stages over the grader (`nox -s practice -- COMMAND`).

    start [ITEM] [--new]            an empty attempt file (a mechanism tinygpt or M01, a named
                                    re-solve modern_lm:layer_reconstruction, a drill P19, a
                                    Triton kernel T04); no ITEM: list
    check [ITEM] [--all] [--note T] [--score DIM=N]  grade the current stage (--all: on until
                                    one fails); a model build: the rubric's evidence, and
                                    --score keeps your 0-4 on a dimension with the check
    repair [ITEM]                   start the drill that owns the last failure
    watch [ITEM]                    re-check on every save, one live screen
    due                             the re-solves due today, oldest first
    reveal [ITEM]                   where the reference is; marks it opened
    status [--gates]                every item: attempt, stage, time, next re-solve, learned;
                                    --gates: the readiness gates with their evidence
    history [ITEM]                  a table per item and <home>/history.png
    diagnose [--self ITEM=N] [--finish]  the baseline diagnostic and the route it fixes
    mock [--start] [--score DIM=N] [--abandon]  the next mock by the sampler (a model mock in
                                    its turn); --start runs it, frozen and graded at its
                                    deadline; --score: your rubric scores; --abandon: close
                                    a mock left open (logged as abandoned)
    log [--csv | --markdown]        the error log with the kit's fields, one entry per miss
    today [--day N]                 the route's day: its blocks, repairs and re-solves first
    plan                            every day of the route: done, due and open

The home folder is --home, else $GPTLAB_PRACTICE_HOME, else ./practice/. Exit status:
0 done (a check passed), 1 a check failed or a command refused, 2 usage, 3 store error.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import RefusedError, UsageError
from .route import SELF_SCORED
from .rubric import ANY_RUBRIC_KEYS, MODEL_RUBRIC_KEYS, RUBRIC_KEYS

if TYPE_CHECKING:  # the commands load after the arguments are read: a bad one is answered first
    from .workbench import Clock, Limits

HOME_VARIABLE = "GPTLAB_PRACTICE_HOME"
ROOT_VARIABLE = "GPTLAB_ROOT"
SELF_KEYS = tuple(item.key for item in SELF_SCORED)


def _system_clock() -> datetime:
    return datetime.now().astimezone()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gptlab-practice", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument(
        "--home", type=_folder, help=f"practice folder (default ${HOME_VARIABLE} or ./practice)"
    )
    parser.add_argument(
        "--root",
        type=_folder,
        help=f"the gptlab checkout (default ${ROOT_VARIABLE} or found upward)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="begin an attempt from an empty file")
    start.add_argument(
        "mechanism",
        nargs="?",
        metavar="ITEM",
        help="a mechanism (tinygpt, or its kit name M01), a named re-solve"
        " (modern_lm:layer_reconstruction), a drill (P19) or a Triton kernel (T04); without it,"
        " the list of what can be started",
    )
    start.add_argument(
        "--new", action="store_true", help="archive an attempt in progress and begin again"
    )
    check = commands.add_parser("check", help="grade the current stage")
    check.add_argument("mechanism", nargs="?")
    check.add_argument(
        "--all", action="store_true", help="go on through later stages until one fails"
    )
    check.add_argument("--note", help="what you decided (joins the first wrong decision)")
    check.add_argument(
        "--score",
        dest="build_scores",
        action="append",
        type=_build_score,
        default=[],
        metavar="DIM=N",
        help=(
            "a model build: your 0-4 score on a model-build rubric dimension, kept with this"
            f" check ({', '.join(MODEL_RUBRIC_KEYS)})"
        ),
    )
    check.add_argument(
        "--timeout", type=float, default=None, help="per-test limit in seconds (default 60)"
    )
    check.add_argument(
        "--memory-limit", type=int, default=None, help="MiB per test process (default 4096)"
    )
    check.add_argument(
        "--workers",
        type=int,
        default=None,
        help="test worker processes (default 1; 0: none, faster, no crash isolation)",
    )
    repair = commands.add_parser("repair", help="start the drill that owns the last failure")
    repair.add_argument("mechanism", nargs="?", metavar="ITEM")
    watch = commands.add_parser("watch", help="re-check the current stage on every save")
    watch.add_argument("mechanism", nargs="?", metavar="ITEM")
    commands.add_parser("due", help="the re-solves due today or overdue, oldest first")
    reveal = commands.add_parser("reveal", help="where the reference is (marks it opened)")
    reveal.add_argument("mechanism", nargs="?")
    status = commands.add_parser("status", help="every item at a glance")
    status.add_argument(
        "--gates", action="store_true", help="the readiness gates, each met or not, with evidence"
    )
    diagnose = commands.add_parser(
        "diagnose", help="the baseline diagnostic: its items, your scores, the route it picks"
    )
    diagnose.add_argument(
        "--self",
        dest="self_scores",
        action="append",
        type=_self_score,
        default=[],
        metavar="ITEM=N",
        help=f"your 0-3 score of an explain-aloud item ({', '.join(SELF_KEYS)})",
    )
    diagnose.add_argument(
        "--finish", action="store_true", help="score the five dimensions and fix the route"
    )
    today = commands.add_parser("today", help="today's day of the route and its blocks")
    today.add_argument("--day", type=_day, help="another day of the route (1-based)")
    commands.add_parser("plan", help="every day of the route: done, due and open")
    mock = commands.add_parser("mock", help="a timed mock: drawn, frozen at its deadline, graded")
    mock.add_argument(
        "--start", action="store_true", help="run the drawn mock to its deadline, then grade it"
    )
    mock.add_argument(
        "--score",
        dest="mock_scores",
        action="append",
        type=_rubric_score,
        default=[],
        metavar="DIM=N",
        help=(
            f"your 0-4 score of the last mock on a rubric dimension (coding rubric:"
            f" {', '.join(RUBRIC_KEYS)}; a model mock: {', '.join(MODEL_RUBRIC_KEYS)})"
        ),
    )
    mock.add_argument(
        "--abandon",
        action="store_true",
        help="close a mock left open (its --start stopped early): logged as abandoned",
    )
    log = commands.add_parser("log", help="the error log, one entry per miss (the kit's fields)")
    form = log.add_mutually_exclusive_group()
    form.add_argument("--csv", action="store_const", const="csv", dest="form", help="as CSV")
    form.add_argument(
        "--markdown", action="store_const", const="markdown", dest="form", help="as a table"
    )
    history = commands.add_parser("history", help="tables and <home>/history.png")
    history.add_argument("mechanism", nargs="?")
    return parser


def _folder(text: str) -> Path:
    """A folder option: an empty value would silently mean the working folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (name a folder)")
    return Path(text)


def _self_score(text: str) -> tuple[str, int]:
    """`kv_capacity=2`: an explain-aloud item's key and the learner's 0-3 score."""
    key, sep, value = text.partition("=")
    if not sep or key not in SELF_KEYS:
        keys = ", ".join(SELF_KEYS)
        raise argparse.ArgumentTypeError(f"{text!r}: expected ITEM=N, ITEM one of {keys}")
    if value not in ("0", "1", "2", "3"):
        raise argparse.ArgumentTypeError(f"{text!r}: the score is an integer 0-3")
    return key, int(value)


def _rubric_score(text: str) -> tuple[str, int]:
    """`contract=3`: a rubric dimension and the learner's 0-4 score."""
    key, sep, value = text.partition("=")
    if not sep or key not in ANY_RUBRIC_KEYS:
        keys = ", ".join(ANY_RUBRIC_KEYS)
        raise argparse.ArgumentTypeError(f"{text!r}: expected DIM=N, DIM one of {keys}")
    if value not in ("0", "1", "2", "3", "4"):
        raise argparse.ArgumentTypeError(f"{text!r}: the score is an integer 0-4")
    return key, int(value)


def _build_score(text: str) -> tuple[str, int]:
    """`forward=3`: a model-build rubric dimension and the learner's 0-4 score."""
    key, sep, value = text.partition("=")
    if not sep or key not in MODEL_RUBRIC_KEYS:
        keys = ", ".join(MODEL_RUBRIC_KEYS)
        raise argparse.ArgumentTypeError(f"{text!r}: expected DIM=N, DIM one of {keys}")
    if value not in ("0", "1", "2", "3", "4"):
        raise argparse.ArgumentTypeError(f"{text!r}: the score is an integer 0-4")
    return key, int(value)


def _day(text: str) -> int:
    """`--day N`: a day of the route, 1 or later."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a day of the route is an integer >= 1")
    return int(text)


def _home(option: Path | None) -> Path:
    """The practice folder; one that exists as anything but a folder is refused, naming where
    it came from (read as a home, a file would look like an empty store)."""
    from_environment = bool(os.environ.get(HOME_VARIABLE)) and option is None
    value = option or (Path(os.environ[HOME_VARIABLE]) if from_environment else None)
    home = (value or Path.cwd() / "practice").expanduser().resolve()
    if home.exists() and not home.is_dir():
        named = (
            f"${HOME_VARIABLE}={os.environ[HOME_VARIABLE]}"
            if from_environment
            else f"--home {value}"
            if value
            else f"the default home ./practice ({home})"
        )
        raise UsageError(f"{named}: not a folder (a file is there): name a practice folder")
    return home


def find_root(option: Path | None, home: Path) -> Path:
    """The checkout whose packages/*/tests a check runs."""
    if option or os.environ.get(ROOT_VARIABLE):
        root = (option or Path(os.environ[ROOT_VARIABLE])).expanduser().resolve()
        if not (root / "packages" / "testkit").is_dir():
            raise UsageError(f"--root {root}: not a gptlab checkout (no packages/testkit)")
        return root
    for start in (Path.cwd().resolve(), home):
        for folder in (start, *start.parents):
            if (folder / "packages" / "testkit" / "pyproject.toml").is_file():
                return folder
    raise UsageError(
        f"cannot find the gptlab checkout above {Path.cwd()}: pass --root or set ${ROOT_VARIABLE}"
    )


def _limits(options: argparse.Namespace) -> Limits:
    limits: Limits = {}
    if options.timeout is not None:
        if not math.isfinite(options.timeout) or options.timeout <= 0:
            raise UsageError(
                f"--timeout must be a finite number > 0 seconds, got {options.timeout:g}"
            )
        limits["timeout"] = options.timeout
    if options.memory_limit is not None:
        if options.memory_limit < 0:
            raise UsageError(f"--memory-limit must be >= 0 MiB, got {options.memory_limit}")
        limits["memory_limit"] = options.memory_limit
    if options.workers is not None:
        if options.workers < 0:
            raise UsageError(f"--workers must be >= 0, got {options.workers}")
        limits["workers"] = options.workers
    return limits


def _note(note: str | None) -> str | None:
    """`--note`: text the store can keep (a non-UTF-8 argument is refused before any write)."""
    if note is None:
        return None
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("--note is not UTF-8 text: write it again in a UTF-8 terminal") from None
    return note


def main(argv: Sequence[str] | None = None, *, clock: Clock | None = None) -> int:
    options = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from .commands import Practice
    from .store import StoreError

    try:
        home = _home(options.home)
        needs_root = options.command in ("check", "reveal", "watch")
        root = find_root(options.root, home) if needs_root else None
        practice = Practice(home, root, clock or _system_clock, print)
        try:
            if options.command == "start":
                return practice.start(options.mechanism, options.new)
            if options.command == "check":
                limits, note = _limits(options), _note(options.note)
                scores = dict(options.build_scores)
                return practice.check(options.mechanism, options.all, note, limits, scores=scores)
            if options.command == "reveal":
                return practice.reveal(options.mechanism)
            if options.command == "repair":
                return practice.repair(options.mechanism)
            if options.command == "due":
                return practice.due()
            if options.command == "watch":
                from .watch import watch

                return watch(practice, options.mechanism)
            if options.command == "status":
                return practice.status(options.gates)
            if options.command == "today":
                return practice.today(options.day)
            if options.command == "plan":
                return practice.plan()
            if options.command == "mock":
                if options.start and options.mock_scores:
                    raise UsageError("--start and --score: score the mock once it is graded")
                if options.abandon and (options.start or options.mock_scores):
                    raise UsageError("--abandon alone: it closes the open mock, nothing else")
                needs = find_root(options.root, home) if options.start else None
                practice.bench.root = practice.bench.root or needs
                return practice.mock(options.start, dict(options.mock_scores), options.abandon)
            if options.command == "log":
                return practice.log(options.form or "markdown")
            if options.command == "diagnose":
                return practice.diagnose(dict(options.self_scores), options.finish)
            return practice.history(options.mechanism)
        finally:
            practice.close()
    except UsageError as error:
        print(f"gptlab-practice: {error}", file=sys.stderr)
        return 2
    except RefusedError as error:
        print(f"gptlab-practice: {error}", file=sys.stderr)
        return 1
    except StoreError as error:
        print(f"gptlab-practice: {error}", file=sys.stderr)
        return 3
    except OSError as error:  # the home or an attempt file cannot be written or read
        where = f" {error.filename}" if error.filename else ""
        print(f"gptlab-practice:{where}: {error.strerror or error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
