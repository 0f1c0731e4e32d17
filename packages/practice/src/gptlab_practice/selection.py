"""pytest plugin (`-p gptlab_practice.selection`): keep only one stage's tests.

`--practice-stage MECH:N` deselects every collected test that stage N of MECH (a
mechanism, or a named re-solve `MECH:NAME`) does not select (stages.toml), after the
tests are collected and before the grader's plugin routes them. Loaded only by a
practice check, never by entry point.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .stages import TIER_MARKS, TestIdentity, mechanisms, resolves


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("gptlab-practice").addoption(
        "--practice-stage",
        metavar="MECH:N",
        help="run only the tests that stage N of mechanism MECH selects (stages.toml)",
    )


def _package(path: Path) -> str:
    """`.../packages/<name>/tests/...` -> name."""
    parts = path.parts
    if "packages" in parts:
        index = len(parts) - 1 - parts[::-1].index("packages")
        if index + 1 < len(parts):
            return parts[index + 1]
    return path.parent.name


def identity(item: pytest.Item) -> TestIdentity:
    owners = [mark.args[0] for mark in item.iter_markers("owner") if mark.args]
    marks = frozenset(m.name for m in item.iter_markers() if m.name in TIER_MARKS)
    return TestIdentity(
        package=_package(Path(item.path)),
        file=Path(item.path).stem,
        name=getattr(item, "originalname", item.name),
        owner=owners[0] if owners else "",
        marks=marks,
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    option = config.getoption("--practice-stage")
    if not option:
        return
    name, _, number = str(option).rpartition(":")
    mechanism = mechanisms().get(name) or resolves().get(name)  # `modern_lm:NAME:1` too
    if mechanism is None or not number.isdigit() or not 1 <= int(number) <= len(mechanism.stages):
        raise pytest.UsageError(f"--practice-stage {option}: expected MECH:N from stages.toml")
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (keep if mechanism.selects(int(number), identity(item)) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
