"""Text tables shared by the pytest plugin, the grader and the known-bad ladder."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from .candidates import VARIABLES, drill_catalogue, is_reference, module_spec
from .clauses import clause_order
from .owners import OWNERS
from .results import TIERS, TestResult


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """Left-aligned plain-text table, one string per line."""
    cells = [[str(cell) for cell in headers]] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return [line.rstrip() for line in lines]


def graded_modules() -> dict[str, str]:
    return {name: module_spec(name) for name in VARIABLES}


def module_lines() -> list[str]:
    """Every mechanism's variable, and the drills' that are swapped (32 references is noise)."""
    rows = [
        (name, spec, "reference" if is_reference(name) else "CANDIDATE")
        for name, spec in graded_modules().items()
        if not VARIABLES[name].is_drill or not is_reference(name)
    ]
    return table(("variable", "module", "role"), rows)


NOT_RERUN = "reference, not re-run"


def scorecard_lines(results: Sequence[TestResult], not_rerun: Sequence[str] = ()) -> list[str]:
    """Passed / failed / skipped per package, and per tier inside tinygpt.

    `not_rerun`: the packages of the whole ladder; any of them without a result here
    had no graded test that can see a swapped candidate, so grading did not run it
    again: it is listed with the verdict `reference, not re-run`.
    """
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for result in results:
        counts[result.package][result.outcome] += 1
        for tier in result.tiers:
            counts[f"{result.package} {tier}"][result.outcome] += 1
    missing = [package for package in not_rerun if package not in counts]
    order = sorted([*counts, *missing], key=lambda key: (key.split(" ")[0], key))
    rows: list[tuple[object, ...]] = []
    for key in order:
        if key in missing:
            rows.append((key, "-", "-", "-", NOT_RERUN))
            continue
        label = key if " " not in key else "  " + key.split(" ", 1)[1]
        c = counts[key]
        verdict = "FAIL" if c["failed"] else "pass"
        rows.append((label, c["passed"], c["failed"], c["skipped"], verdict))
    return table(("package / tier", "passed", "failed", "skipped", "verdict"), rows)


def routing_lines(results: Sequence[TestResult]) -> list[str]:
    """For each owner with failures: its mechanism, the repair target and the failed tests."""
    failed: dict[str, list[str]] = defaultdict(list)
    broken: dict[str, set[str]] = defaultdict(set)
    for result in results:
        if result.outcome == "failed":
            line = f"{result.nodeid}: {result.reason}" if result.reason else result.nodeid
            failed[result.owner].append(line)
            broken[result.owner].update(result.clauses)
    lines: list[str] = []
    for key in sorted(failed, key=lambda k: (OWNERS[k].package, k) if k in OWNERS else ("", k)):
        owner = OWNERS.get(key)
        mechanism = owner.mechanism if owner else "unknown owner"
        package = owner.package if owner else "?"
        lines.append(f"{key}  [{package}] {mechanism}  ({len(failed[key])} failed)")
        if owner:
            lines.append(f"    repair: {owner.repair}")
            if owner.drills and owner.package != "drills":
                lines.append(f"    drills: {drill_labels(owner.drills)}")
            elif owner.related:
                lines.append(f"    drills: {no_owning_drill(owner.package, owner.related)}")
        if broken[key]:
            lines.append(f"    clauses broken: {', '.join(sorted(broken[key], key=clause_order))}")
        for line in failed[key]:
            lines.append(f"    - {line}")
    return lines


def drill_labels(drill_ids: Sequence[str]) -> str:
    """`P19 single-token decode attention (45m), ...`: the repair drills, first to start
    first (titles and time boxes from gptlab-drills' catalogue when it is installed)."""
    drills = drill_catalogue()
    return ", ".join(drills[i].label if i in drills else i for i in drill_ids)


def no_owning_drill(package: str, related: Sequence[str]) -> str:
    """The repair line of an owner whose invariant no drill states: repair it in its own
    package (stage), and the drills that only practise a neighbouring skill."""
    return (
        f"no drill owns this invariant: repair it in {package} itself"
        f" (related drills: {drill_labels(related)})"
    )


def failed_owners(results: Iterable[TestResult]) -> set[str]:
    return {result.owner for result in results if result.outcome == "failed"}


__all__ = [
    "NOT_RERUN",
    "TIERS",
    "drill_labels",
    "failed_owners",
    "graded_modules",
    "module_lines",
    "no_owning_drill",
    "routing_lines",
    "scorecard_lines",
    "table",
]
