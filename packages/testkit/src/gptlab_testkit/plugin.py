"""pytest plugin (entry point `gptlab`): markers, owner checks, routing and scorecard.

- registers the markers `tier0`..`tier3`, `contract`, `extension`, `owner(key)`;
- refuses to run a test that lacks an owner from routing.toml or a contract/extension mark;
- ends a failing run with the routing rows of its failures (a passing run prints nothing);
- `--gptlab-scorecard` prints graded modules and a per-package scorecard;
- `--gptlab-report PATH` writes every result as JSON for the grader and the ladder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .candidates import VARIABLES, collection_errors
from .owners import OWNERS
from .reporting import graded_modules, module_lines, routing_lines, scorecard_lines
from .results import TIERS, TestResult, package_of, write_report


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gptlab")
    group.addoption(
        "--gptlab-scorecard",
        action="store_true",
        help="print graded modules and a per-package scorecard at the end",
    )
    group.addoption("--gptlab-report", metavar="PATH", help="write every result as JSON")


def pytest_configure(config: pytest.Config) -> None:
    descriptions = ("construction and shape", "numerical contract", "cache contract", "generation")
    for tier, what in zip(TIERS, descriptions, strict=True):
        config.addinivalue_line("markers", f"{tier}: tinygpt {what}")
    config.addinivalue_line("markers", "contract: graded invariant of CONTRACTS.md")
    config.addinivalue_line("markers", "extension: this project's behaviour beyond the contract")
    config.addinivalue_line("markers", "owner(key): routing.toml key of the owning mechanism")
    config.pluginmanager.register(GptlabSession(config), "gptlab-session")
    # Tiny models run fastest on one intra-op thread, and suites run side by side.
    if "OMP_NUM_THREADS" not in os.environ:
        import torch

        torch.set_num_threads(1)


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
    return TestResult(
        nodeid=item.nodeid,
        package=package_of(Path(item.path)),
        owner=owner,
        kind="contract" if kinds[0] == "contract" else "extension",
        tiers=tuple(tier for tier in TIERS if item.get_closest_marker(tier)),
    )


class GptlabSession:
    """Per-run state: one routed result per selected test."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, TestResult] = {}

    @pytest.hookimpl(trylast=True)  # after -m / -k deselection
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        records = [_result_for(item) for item in items]
        problems = [record for record in records if isinstance(record, str)]
        if problems:
            raise pytest.UsageError("unrouted tests:\n  " + "\n  ".join(problems))
        self.results = {r.nodeid: r for r in records if isinstance(r, TestResult)}

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        # A broken candidate ends the run with one line, before any traceback is reported.
        report = yield
        if report.failed and collection_errors:
            pytest.exit(f"candidate error: {collection_errors[0]}", returncode=4)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = self.results.get(report.nodeid)
        if result is None:
            return
        if report.failed:
            result.outcome = "failed"
        elif report.skipped and result.outcome != "failed":
            result.outcome = "skipped"

    def pytest_report_header(self) -> list[str] | None:
        swapped = any(os.environ.get(name) for name in VARIABLES)
        if self.config.getoption("--gptlab-scorecard") or swapped:
            return ["gptlab graded modules:", *("  " + line for line in module_lines())]
        return None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        results = list(self.results.values())
        if self.config.getoption("--gptlab-scorecard"):
            terminalreporter.section("gptlab scorecard")
            for line in scorecard_lines(results):
                terminalreporter.write_line(line)
        routing = routing_lines(results)
        if routing:
            terminalreporter.section("gptlab failure routing: owner -> repair target", red=True)
            for line in routing:
                terminalreporter.write_line(line)

    def pytest_sessionfinish(self) -> None:
        report = self.config.getoption("--gptlab-report")
        if report:
            write_report(Path(report), list(self.results.values()), graded_modules())
