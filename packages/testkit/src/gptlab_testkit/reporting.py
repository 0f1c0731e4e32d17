"""Text tables shared by the pytest plugin, the grader and the known-bad ladder."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

from .candidates import VARIABLES, drill_catalogue, is_reference, module_spec
from .clauses import clause_order
from .owners import OWNERS
from .results import TIERS, TestResult
from .scoring import ADVISORY, BEYOND, HELD, advisory_outcome, is_advisory, scored


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
    """The contract tests' passed / failed / skipped per package (per tier inside tinygpt),
    after the scoring policy (`scoring.scored`); then, apart and never scored, the held
    rejections' count, the extension tests ("beyond the contract") and the advisory ones.

    `not_rerun`: the packages of the whole ladder; any of them without a result here
    had no graded test that can see a swapped candidate, so grading did not run it
    again: it is listed with the verdict `reference, not re-run`.
    """
    results = scored(results)
    contract = [r for r in results if r.kind == "contract" and not is_advisory(r)]
    lines = _contract_table(contract, results, not_rerun)
    held = Counter(r.package for r in contract if r.held)
    if held:
        counts = ", ".join(f"{package} {n}" for package, n in sorted(held.items()))
        lines += ["", f"not earned, {HELD}: {counts}"]
    extension = [r for r in results if r.kind == "extension"]
    if extension:
        lines += ["", BEYOND] if lines else [BEYOND]
        lines += _outcome_table(extension)
    advisory = [r for r in results if is_advisory(r)]
    if advisory:
        lines += ["", ADVISORY]
        lines += _outcome_table(advisory, advisory_outcome, ("passed", "failed"))
        failed = [r for r in advisory if advisory_outcome(r) == "failed"]
        lines += [f"  - {r.nodeid}: {r.reason}" for r in failed]
    return lines


def _outcome_table(
    results: Sequence[TestResult],
    outcome: Callable[[TestResult], str] = lambda r: r.outcome,
    columns: Sequence[str] = ("passed", "failed", "skipped"),
) -> list[str]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for result in results:
        counts[result.package][outcome(result)] += 1
    rows = [(package, *(c[name] for name in columns)) for package, c in sorted(counts.items())]
    return table(("package", *columns), rows)


def _contract_table(
    contract: Sequence[TestResult], everything: Sequence[TestResult], not_rerun: Sequence[str]
) -> list[str]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for result in everything:  # a package whose every test is set apart still has a row
        if result.kind == "contract":
            counts[result.package].update(())
    for result in contract:
        counts[result.package][result.outcome] += 1
        for tier in result.tiers:
            counts[f"{result.package} {tier}"][result.outcome] += 1
    missing = [package for package in not_rerun if package not in counts]
    order = sorted([*counts, *missing], key=lambda key: (key.split(" ")[0], key))
    rows: list[tuple[object, ...]] = []
    if not order:
        return []  # extension tests alone (a tooling suite): only their own table
    for key in order:
        if key in missing:
            rows.append((key, "-", "-", "-", NOT_RERUN))
            continue
        label = key if " " not in key else "  " + key.split(" ", 1)[1]
        c = counts[key]
        verdict = "FAIL" if c["failed"] else "pass" if c["passed"] else "nothing scored"
        rows.append((label, c["passed"], c["failed"], c["skipped"], verdict))
    return table(("package / tier", "passed", "failed", "skipped", "verdict"), rows)


def routing_lines(results: Sequence[TestResult]) -> list[str]:
    """For each owner with failures: its mechanism, the repair target and the failed tests."""
    failed: dict[str, list[str]] = defaultdict(list)
    broken: dict[str, set[str]] = defaultdict(set)
    for result in results:
        if result.outcome == "failed" and not result.held:  # a held test is no mistake
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
    """Owners of real failures (a held rejection is none)."""
    return {result.owner for result in results if result.outcome == "failed" and not result.held}


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
