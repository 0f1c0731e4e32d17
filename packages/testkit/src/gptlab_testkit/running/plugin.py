"""pytest plugin (entry point `gptlab`): markers, owner checks, routing and scorecard.

Installed with any gptlab package, it loads into every pytest run of that environment but
acts only where asked (`opted_in`): this repository's suites (its pyproject.toml sets the
ini option `gptlab = true`), a `conftest.py` that sets `gptlab = True` (the rootdir's or one
beside the tests given), `--gptlab` or any other `--gptlab-...` option (grade, practice
and the ladder pass `--gptlab-report`). Elsewhere it registers nothing, changes no
option, loads no hypothesis profile and imports no torch: another project's suite runs
as if it were not installed. Where it acts:

- registers the markers `tier0`..`tier3`, `contract`, `extension`, `owner(key)`,
  `clause(*ids)`, `rejection`;
- refuses to run a test that lacks an owner from routing.toml or a contract/extension mark;
- ends a failing run with the routing rows of its failures (a passing run prints nothing);
- `--gptlab-scorecard` prints graded modules and a per-package scorecard;
- `--gptlab-report PATH` writes every result as JSON for the grader and the ladder;
- applies the scoring policy (`scoring.scored`: held rejections, advisory results) to
  its records before either is written;
- `--gptlab-memory-limit MIB` caps each test process's memory; with pytest-xdist and
  pytest-timeout it survives hanging and crashing candidates (see `isolation`).

Grading protections (`--gptlab-workers N`, `--timeout S`, `--gptlab-memory-limit MIB`):
tests run in processes forked from this one after collection (`isolation.ForkPool`),
each under a per-test time limit and an address-space limit, from a scratch working
directory; a test that hangs or kills its process fails, routed, and the rest runs.
Whenever a candidate is swapped in (any *_MODULE variable naming something other
than the reference) they are on by default, with grade's defaults (60 s, 4096 MiB,
CPU count up to 4 workers), in every session that runs this plugin: package and tier
sessions, `slice`, `integration`, plain `pytest`. `--timeout 0`, `--gptlab-memory-limit
0` and `--gptlab-workers 0` turn each off; `-n N` (pytest-xdist) and `--pdb` keep
their own way of running tests.

Under pytest-xdist the workers collect and run the tests and the controller reports:
workers write the routed records of the collected tests to a scratch folder shared
with the controller, which also routes the tests of a crashed worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gptlab_testkit.candidates import (
    VARIABLES,
    collection_errors,
    is_reference,
    spawn_judged_workers,
    variables_of,
)
from gptlab_testkit.clauses import names_only_rejections
from gptlab_testkit.judge import advisory, raised_at
from gptlab_testkit.judge.defaults import (
    DEFAULT_MEMORY_MIB as DEFAULT_MEMORY_MIB,  # re-exported: callers' names
)
from gptlab_testkit.judge.defaults import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
from gptlab_testkit.judge.defaults import HOLD_FD_VARIABLE, JUDGE_VARIABLE
from gptlab_testkit.judge.defaults import default_workers as default_workers
from gptlab_testkit.running import isolation
from gptlab_testkit.running.brief import brief_longrepr
from gptlab_testkit.running.isolation import (
    CRASHES_BEFORE_STOP,
    ForkPool,
    SharedState,
    Watchdog,
    fail_if_stopped,
    innermost_candidate,
    set_memory_limit,
    suspects_of,
    timeout_seconds,
)
from gptlab_testkit.running.owners import OWNERS
from gptlab_testkit.running.reporting import (
    graded_modules,
    module_lines,
    routing_lines,
    scorecard_lines,
)
from gptlab_testkit.running.results import (
    NOT_RUN,
    TIERS,
    TestResult,
    package_of,
    records_payload,
    results_from,
    write_report,
)
from gptlab_testkit.running.scoring import scored

_SHARED_KEY = "gptlab_shared"
_TIMEOUT = re.compile(r"Timeout \(>([0-9.]+)s\)")

# The grading defaults (also `grade`'s) live in `defaults`, which imports no pytest.
# The pipe `grade` waits on: written once collection (the candidates' import) is done.
COLLECTED_FD_VARIABLE = "GPTLAB_COLLECTED_FD"


def candidates_swapped() -> list[str]:
    """The variables that select something other than their reference."""
    return [name for name in VARIABLES if not is_reference(name)]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("gptlab", type="bool", default=False, help="run the gptlab plugin here")
    group = parser.getgroup("gptlab")
    group.addoption(
        "--gptlab",
        action="store_true",
        help="run the gptlab plugin (owners, routing, grading protections) in this session",
    )
    group.addoption(
        "--gptlab-scorecard",
        action="store_true",
        help="print graded modules and a per-package scorecard at the end",
    )
    group.addoption("--gptlab-report", metavar="PATH", help="write every result as JSON")
    group.addoption(
        "--gptlab-report-key", metavar="HEX", help="also write PATH.hmac (grade's own runs)"
    )
    group.addoption(
        "--gptlab-memory-limit",
        type=int,
        default=None,
        metavar="MIB",
        help="address-space limit of each test process in MiB (0: none; default "
        f"{DEFAULT_MEMORY_MIB} when a candidate is swapped in, else none)",
    )
    group.addoption(
        "--gptlab-workers",
        type=int,
        default=None,
        metavar="N",
        help="run tests in N processes forked after collection (0: in this process; "
        "default: CPU count, at most 4, when a candidate is swapped in, else 0)",
    )
    group.addoption(
        "--gptlab-stop-once-caught",
        default="",
        metavar="OWNER:N",
        help="stop the run once N tests have failed, one of them routed to OWNER (a "
        "known-bad candidate's verdict is settled then; the rest are reported as not run)",
    )
    group.addoption(
        "--gptlab-failures-shown",
        type=int,
        default=0,
        metavar="N",
        help="list at most N failed tests per owner in the routing block (0: all)",
    )
    group.addoption(
        "--gptlab-not-rerun",
        default="",
        metavar="PACKAGES",
        help="comma-separated packages the scorecard lists as 'reference, not re-run'",
    )


def _grading_defaults(config: pytest.Config) -> None:
    """With a candidate swapped in, no documented path runs it unprotected."""
    swapped = bool(candidates_swapped())
    option = config.option
    if option.gptlab_memory_limit is None:
        option.gptlab_memory_limit = DEFAULT_MEMORY_MIB if swapped else 0
    own_runner = bool(getattr(option, "numprocesses", None)) or getattr(option, "usepdb", False)
    if option.gptlab_workers is None:
        option.gptlab_workers = default_workers() if swapped and not own_runner else 0
    if swapped and getattr(option, "timeout", "absent") is None:  # pytest-timeout, not given
        option.timeout = DEFAULT_TIMEOUT_S
        if getattr(option, "timeout_method", None) is None:
            option.timeout_method = "signal"


# Options whose explicit use asks for the plugin (value when not given).
_OPT_IN_OPTIONS = {
    "gptlab_scorecard": False,
    "gptlab_report": None,
    "gptlab_memory_limit": None,
    "gptlab_workers": None,
    "gptlab_stop_once_caught": "",
    "gptlab_not_rerun": "",
}


def opted_in(config: pytest.Config) -> bool:
    """Whether this session asked for the plugin: the `gptlab` ini option, `--gptlab` or
    another `--gptlab-...` option, or a conftest.py loaded before configuration (the
    rootdir's, or one in a folder of the given tests) that sets `gptlab = True`."""
    if config.getoption("gptlab") or config.getini("gptlab"):
        return True
    if any(getattr(config.option, dest) != unset for dest, unset in _OPT_IN_OPTIONS.items()):
        return True
    return any(
        getattr(plugin, "gptlab", None) is True
        and str(getattr(plugin, "__file__", "")).endswith("conftest.py")
        for plugin in config.pluginmanager.get_plugins()
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """A grading run (grade sets the judge's mode): each judged candidate's worker starts
    before the conftests that ask for it are imported, so its interpreter imports torch
    while this process imports the suites (`judge.client.spawn_early`)."""
    if os.environ.get(JUDGE_VARIABLE) and not early_config.known_args_namespace.collectonly:
        spawn_judged_workers()
    _wait_until_released()


def _wait_until_released() -> None:
    """A held run (`suites.ForkedRun(hold=True)`) waits here, before any conftest or
    candidate is imported, until grade has listed the tests it expects (or has ended)."""
    fd = os.environ.pop(HOLD_FD_VARIABLE, "")
    if fd.isdigit():
        with contextlib.suppress(OSError):
            os.read(int(fd), 2)
            os.close(int(fd))


@pytest.hookimpl(tryfirst=True)  # before pytest-timeout reads its options
def pytest_configure(config: pytest.Config) -> None:
    if not opted_in(config):
        return  # another project's suite: nothing registered, nothing changed
    _grading_defaults(config)
    descriptions = ("construction and shape", "numerical contract", "cache contract", "generation")
    for tier, what in zip(TIERS, descriptions, strict=True):
        config.addinivalue_line("markers", f"{tier}: tinygpt {what}")
    config.addinivalue_line("markers", "contract: graded invariant of docs/contracts.md")
    config.addinivalue_line("markers", "extension: this project's behaviour beyond the contract")
    config.addinivalue_line("markers", "owner(key): routing.toml key of the owning mechanism")
    config.addinivalue_line(
        "markers", "clause(*ids): the numbered contract clauses a test checks (P05.3, M02.7)"
    )
    config.addinivalue_line(
        "markers",
        "rejection: a malformed-input test; it earns only when the valid-input tests of its "
        "file pass (gptlab_testkit.running.scoring)",
    )
    _load_hypothesis_profile()
    session = GptlabSession(config)
    config.pluginmanager.register(session, "gptlab-session")
    if session.runs_tests:
        set_memory_limit(config.getoption("--gptlab-memory-limit"))
    # Tiny models run fastest on one intra-op thread, and suites run side by side; a
    # fork pool needs it (a thread pool does not survive fork: OpenMP can hang there).
    if "OMP_NUM_THREADS" not in os.environ or _pool_workers(config):
        import torch

        torch.set_num_threads(1)


def _load_hypothesis_profile() -> None:
    """Verdicts must not depend on the machine's load or on a random draw: no deadlines, no
    too-slow health check, the same examples on every run (derandomized, no example database).

    Tests keep their own example counts; the per-test time limit bounds a real hang. A
    failing example is reported as found, not shrunk (the verdict is the same; shrinking
    against a wrong candidate took seconds of every failing check, which a learner waits
    for on each save).
    """
    from hypothesis import HealthCheck, Phase, settings

    settings.register_profile(
        "gptlab",
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),
    )
    settings.load_profile("gptlab")


def _stop_rule(text: str) -> tuple[str, int] | None:
    """`OWNER:N` of --gptlab-stop-once-caught, checked (None when not given)."""
    if not text:
        return None
    owner, _, count = text.rpartition(":")
    if owner not in OWNERS or not count.isdigit() or int(count) < 1:
        raise pytest.UsageError(
            f"--gptlab-stop-once-caught wants OWNER:N (a routing.toml key, N >= 1), got {text!r}"
        )
    return owner, int(count)


def _owner_of(item: pytest.Item) -> str | None:
    markers = list(item.iter_markers("owner"))
    if len(markers) != 1 or len(markers[0].args) != 1:
        return None
    key = markers[0].args[0]
    return key if key in OWNERS else None


def _result_for(item: pytest.Item) -> TestResult | str:
    """The routed result record of a test, or why the test cannot be routed."""
    owner = _owner_of(item)
    if owner is None:
        return f"{item.nodeid}: needs exactly one owner(...) whose key is in routing.toml"
    kinds = [kind for kind in ("contract", "extension") if item.get_closest_marker(kind)]
    if len(kinds) != 1:
        return f"{item.nodeid}: needs exactly one of the marks contract, extension"
    clauses = tuple(str(arg) for marker in item.iter_markers("clause") for arg in marker.args)
    return TestResult(
        nodeid=item.nodeid,
        package=package_of(Path(item.path)),
        owner=owner,
        kind="contract" if kinds[0] == "contract" else "extension",
        tiers=tuple(tier for tier in TIERS if item.get_closest_marker(tier)),
        variables=variables_of(Path(item.path)),
        clauses=clauses,
        rejection=is_rejection_test(item, clauses),
    )


def is_rejection_test(item: pytest.Item, clauses: tuple[str, ...]) -> bool:
    """A `rejection` mark, or every clause the test names of kind rejection in its README."""
    if item.get_closest_marker("rejection") is not None:
        return True
    return names_only_rejections(Path(item.path), clauses)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _is_worker(config: pytest.Config) -> bool:
    """A process that runs tests for another that reports: xdist's or the fork pool's."""
    return _is_xdist_worker(config) or isolation.IN_POOL_WORKER


def _pool_workers(config: pytest.Config) -> int:
    if _is_xdist_worker(config) or getattr(config.option, "numprocesses", None):
        return 0
    return int(config.option.gptlab_workers or 0)


def _is_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not _is_worker(config)


def one_line_reason(report: pytest.TestReport) -> str:
    """Why a test failed or was skipped, in one line (timeouts as 'timed out after N s')."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr or "")
    timeout = _TIMEOUT.search(text)
    if timeout:
        return f"timed out after {float(timeout.group(1)):g} s"
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line.removeprefix("Failed: ")[:300]


def show_where_it_raised(
    report: pytest.TestReport, frames: tuple[raised_at.Frame, ...], tbstyle: str
) -> None:
    """A judged failure that raised in the learner's code: its frames there travel with the
    report (the routing block lists the innermost), pytest's failure text gets them as a
    section of its own, and a one-line failure (`--tb=line`) points at the innermost."""
    if not frames:
        return
    where = raised_at.where_lines(frames)
    report.gptlab_where = where  # type: ignore[attr-defined]  # travels with the report
    report.sections.append(("where it raised in your code", "\n".join(where)))
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and tbstyle == "line":
        crash.path, crash.lineno = frames[-1].path, frames[-1].line


def rerun_command(*pytest_args: str) -> str:
    """The command line that ran this grade, with more pytest arguments (grade forks its run,
    so this process's argv is grade's own); "" outside grade."""
    argv = sys.argv
    if not argv or not argv[0].endswith(os.path.join("gptlab_testkit", "grade.py")):
        return ""
    own = argv[1:]
    joiner = [] if "--" in own else ["--"]
    return (
        "`"
        + shlex.join(["python", "-m", "gptlab_testkit.grade", *own, *joiner, *pytest_args])
        + "`"
    )


class GptlabSession:
    """Per-run state: one routed result per selected test."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, TestResult] = {}
        self.runs_tests = not _is_controller(config) and not _pool_workers(config)
        if _is_xdist_worker(config):
            shared = Path(config.workerinput[_SHARED_KEY])  # type: ignore[attr-defined]
        else:
            shared = Path(tempfile.mkdtemp(prefix="gptlab-run-"))
        self.state = SharedState(shared)
        self.watchdog = Watchdog(self.state, timeout_seconds(config))
        self.stop_rule = _stop_rule(config.getoption("--gptlab-stop-once-caught"))
        self.reported: set[str] = set()
        self.candidate_error = ""  # a candidate that could not be imported, in one line
        self.where: dict[str, list[str]] = {}  # a failure's frames in the learner's files
        self.session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    # -- collection (serial runs and workers)
    @pytest.hookimpl(trylast=True)  # after -m / -k deselection
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        records = [_result_for(item) for item in items]
        problems = [record for record in records if isinstance(record, str)]
        if problems:
            raise pytest.UsageError("unrouted tests:\n  " + "\n  ".join(problems))
        if self.stop_rule is not None:  # the owner's tests first: the verdict settles soonest
            owner = self.stop_rule[0]
            items.sort(key=lambda item: _owner_of(item) != owner)
        self.results = {r.nodeid: r for r in records if isinstance(r, TestResult)}
        if _is_xdist_worker(self.config):
            self._publish_records()

    def pytest_collection_finish(self) -> None:
        """Tell `grade` the candidates imported (it bounds the time that takes)."""
        fd = os.environ.pop(COLLECTED_FD_VARIABLE, "")
        if fd.isdigit():
            with contextlib.suppress(OSError):
                os.write(int(fd), b"collected\n")
                os.close(int(fd))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """With --gptlab-workers N, the tests run in the fork pool (see isolation)."""
        workers = _pool_workers(self.config)
        if not workers or self.config.option.collectonly or session.testsfailed:
            return None  # pytest's own loop (it also stops on collection errors)
        scratch = self.state.folder / "cwd"
        scratch.mkdir(exist_ok=True)
        pool = ForkPool(
            session,
            workers,
            memory_limit_mib=int(self.config.option.gptlab_memory_limit or 0),
            timeout_s=timeout_seconds(self.config),
            scratch=scratch,
            on_crash=self._crashed,
        )
        try:
            pool.run()
        finally:
            pool.stop_all()
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)
        return True

    def _publish_records(self) -> None:
        """Every worker collects the same tests; the first to finish tells the controller."""
        target = self.state.folder / "records.json"
        if target.exists():
            return
        partial = target.with_name(f"records.{os.getpid()}.json")
        partial.write_text(json.dumps(records_payload(list(self.results.values()))))
        partial.replace(target)

    def _record(self, nodeid: str) -> TestResult | None:
        if nodeid not in self.results:
            source = self.state.folder / "records.json"
            if source.exists():
                rows = json.loads(source.read_text(encoding="utf-8"))
                for result in results_from(rows):
                    self.results.setdefault(result.nodeid, result)
        return self.results.get(nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        # A broken candidate ends the run with one line, before any traceback is reported.
        report = yield
        if report.failed and collection_errors:
            # Printed by pytest_terminal_summary, plainly (pytest.exit would frame it in
            # '!' as an Exit); the exit status 4 is set in pytest_sessionfinish.
            self.candidate_error = f"candidate error: {collection_errors[0]}"
            raise collector.session.Failed(self.candidate_error)
        return report

    # -- running (serial runs and workers)
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        advisory.begin_test()  # the worker-reported facts this test consults, from here
        result = self.results.get(item.nodeid)
        if result is not None:
            fail_if_stopped(self.state, result)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if report.failed and self.config.option.tbstyle == "line":
            brief_longrepr(report.longrepr)  # grade's FAILURES section: no whole tensor reprs
        result = self.results.get(item.nodeid)
        if report.failed and call.excinfo is not None:
            # Travels with the report (pytest serializes extra attributes) to whoever records it.
            report.gptlab_error = call.excinfo.typename
            frames = raised_at.frames_of(call.excinfo.value)
            show_where_it_raised(report, frames, self.config.option.tbstyle)
        if report.when == "call":  # judged: did the outcome rest on the worker's word?
            failure = str(call.excinfo.value) if call.excinfo is not None else ""
            clauses = result.clauses if result is not None else ()
            rested_on = advisory.outcome_rested_on(report.passed, failure, clauses)
            if rested_on:
                report.gptlab_advisory = rested_on
        if report.failed and result is not None and call.excinfo is not None:
            reason = one_line_reason(report)
            if reason.startswith("timed out after"):
                blamed = innermost_candidate(call.excinfo.tb, result.variables)
                for suspect in [blamed] if blamed else suspects_of(result):
                    self.state.stop(suspect, f"{suspect} hung in an earlier test ({reason})")
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        if _is_xdist_worker(self.config):  # the fork pool's parent watches its own
            self.watchdog.arm(item.nodeid)
        try:
            return (yield)
        finally:
            self.watchdog.disarm()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        try:
            return (yield)
        except KeyboardInterrupt:
            if not _is_worker(self.config):
                raise  # a person pressed Ctrl-C
            pytest.fail("the code under test raised KeyboardInterrupt", pytrace=False)

    # -- reporting (serial runs and the controller)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = self._record(report.nodeid)
        if result is None:
            return
        self.reported.add(report.nodeid)
        result.duration += report.duration or 0.0
        rested_on = getattr(report, "gptlab_advisory", "")
        if isinstance(rested_on, str) and rested_on:
            result.advisory = rested_on
        if report.failed:
            if result.outcome != "failed":
                result.reason = one_line_reason(report)
                result.error = str(getattr(report, "gptlab_error", ""))
                where = getattr(report, "gptlab_where", None)
                if isinstance(where, list) and where:
                    self.where[report.nodeid] = [str(line) for line in where]
            result.outcome = "failed"
            self._stop_if_caught()
        elif report.skipped and result.outcome != "failed":
            result.outcome = "skipped"
            result.reason = one_line_reason(report)

    def _stop_if_caught(self) -> None:
        """--gptlab-stop-once-caught: enough failures, one routed to the owner: stop.

        Also in a fork-pool worker (its records hold the parent's at fork time plus its
        own), so the worker stops after this test and the parent starts no other.
        """
        if self.stop_rule is None or self.session is None:
            return
        owner, count = self.stop_rule
        failed = [r for r in self.results.values() if r.outcome == "failed"]
        if len(failed) >= count and any(r.owner == owner for r in failed):
            self.session.shouldfail = f"caught: {len(failed)} tests failed, one routed to {owner}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_SHARED_KEY] = str(self.state.folder)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        report.longrepr = self._crashed(crashitem, self.state.killed(crashitem))

    def _crashed(self, nodeid: str, killed: str | None) -> str:
        """A test's process died (`killed`: the watchdog's reason): stop list, report text."""
        result = self._record(nodeid)
        for suspect in suspects_of(result) if result else []:
            if killed:
                self.state.stop(suspect, f"{suspect} hung in an earlier test ({killed})")
            elif self.state.count_crash(suspect, nodeid) >= CRASHES_BEFORE_STOP:
                self.state.stop(suspect, f"{suspect} crashed {CRASHES_BEFORE_STOP} earlier tests")
        return killed or "crashed: the test process died (exit, abort or signal)"

    def pytest_report_header(self) -> list[str] | None:
        swapped = any(os.environ.get(name) for name in VARIABLES)
        if self.config.getoption("--gptlab-scorecard") or swapped:
            return ["gptlab graded modules:", *("  " + line for line in module_lines())]
        return None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _is_worker(self.config):
            return
        if self.candidate_error:
            terminalreporter.write_line(self.candidate_error)
        results = list(self.results.values())
        if self.config.getoption("--gptlab-scorecard"):
            terminalreporter.section("gptlab scorecard")
            not_rerun = [p for p in self.config.option.gptlab_not_rerun.split(",") if p]
            for line in scorecard_lines(results, not_rerun):
                terminalreporter.write_line(line)
        shown = int(self.config.getoption("--gptlab-failures-shown") or 0)
        routing = routing_lines(
            results,
            swapped=candidates_swapped(),
            where=self.where,
            shown=shown,
            every_one=rerun_command("--gptlab-failures-shown=0"),
        )
        if routing:
            terminalreporter.section("gptlab failure routing: owner -> repair target", red=True)
            for line in routing:
                terminalreporter.write_line(line)
        deselected = len(terminalreporter.stats.get("deselected", ()))
        if deselected and self.config.getoption("-m") == "contract":
            terminalreporter.write_line(
                f"({deselected} deselected below: the extension tests of these files, beyond"
                " the contract; this run grades the contract tests only)"
            )

    @pytest.hookimpl(tryfirst=True)  # before the terminal summary and the report
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if _is_worker(self.config):
            return
        judge = sys.modules.get(f"{__package__}.judge")  # imported only where used: it
        if judge is not None:  # imports torch, which an unrelated suite must never pay for
            judge.end_workers()  # judge mode: no candidate process is left when results are written
        if self.candidate_error:
            session.exitstatus = 4  # no verdict: the candidate could not be graded
        if not self.config.option.collectonly:
            # A test the run never reached did not pass (-x, --maxfail, Ctrl-C, a stop rule).
            for nodeid, result in self.results.items():
                if nodeid not in self.reported and result.outcome == "passed":
                    result.outcome, result.reason = "skipped", NOT_RUN
        # The scoring policy (held rejections, advisory results) before anything is shown
        # or written: the scorecard, the report, and so practice's and grade's readers.
        self.results = {result.nodeid: result for result in scored(list(self.results.values()))}
        report = self.config.getoption("--gptlab-report")
        if report:
            key = self.config.getoption("--gptlab-report-key")
            results = list(self.results.values())
            key_bytes = bytes.fromhex(key) if key else None
            write_report(Path(report), results, graded_modules(), key=key_bytes)

    def pytest_unconfigure(self) -> None:
        if not _is_worker(self.config):
            shutil.rmtree(self.state.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def two_ranks(request: pytest.FixtureRequest) -> Any:
    """Two real Gloo ranks running the test module's jobs where its candidate (the module's
    `drill`) runs, started once per module (`gptlab_testkit.rank_pair`)."""
    from gptlab_testkit.rank_pair import TwoRanks

    pair = TwoRanks(request.module, request.module.drill)
    yield pair
    pair.stop()
