"""Text tables shared by the pytest plugin, the grader and the known-bad ladder."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from gptlab_testkit.candidates import VARIABLES, drill_catalogue, is_reference, module_spec
from gptlab_testkit.clauses import clause_kinds, clause_order
from gptlab_testkit.running.owners import OWNERS
from gptlab_testkit.running.results import TIERS, TestResult
from gptlab_testkit.running.scoring import (
    ADVISORY,
    BEYOND,
    HELD,
    advisory_outcome,
    is_advisory,
    scored,
)


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
    """Every mechanism's variable, and the drills' that are swapped (32 references is noise);
    with a candidate swapped in, its rows alone and the references named in one line (a
    learner's screen is for the failures)."""
    rows = [
        (name, spec, "reference" if is_reference(name) else "CANDIDATE")
        for name, spec in graded_modules().items()
        if not VARIABLES[name].is_drill or not is_reference(name)
    ]
    swapped = [row for row in rows if row[2] == "CANDIDATE"]
    if not swapped:
        return table(("variable", "module", "role"), rows)
    references = [VARIABLES[row[0]].package for row in rows if row[2] != "CANDIDATE"]
    lines = table(("variable", "module", "role"), swapped)
    return lines + (
        ["every other variable: its reference (" + ", ".join(references) + ")"]
        if references
        else []
    )


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


def routing_lines(
    results: Sequence[TestResult],
    *,
    swapped: Sequence[str] = (),
    where: Mapping[str, Sequence[str]] | None = None,
    shown: int = 0,
    every_one: str = "",
) -> list[str]:
    """For each owner with failures: its mechanism, the repair target, the clauses broken
    and the failed tests (each with where it raised in the learner's own file, `where`).

    `swapped`: the candidates' variables. The owners of their own packages come first; an
    owner of another package (a composed test) says which candidate it ran. `shown`: at
    most this many failed tests per owner (0: all), the rest counted, with `every_one`
    (the command that lists them all)."""
    failed: dict[str, list[TestResult]] = defaultdict(list)
    for result in results:
        if result.outcome == "failed" and not result.held:  # a held test is no mistake
            failed[result.owner].append(result)
    yours = {VARIABLES[v].package for v in swapped if v in VARIABLES}
    lines: list[str] = []
    for key in sorted(failed, key=lambda k: _owner_order(k, yours)):
        lines += _owner_head(key, failed[key], swapped, yours)
        broken = broken_clauses(failed[key], results)
        if broken:
            lines.append(f"    clauses broken: {', '.join(broken)}")
        listed = failed[key][:shown] if shown > 0 else failed[key]
        for result in listed:
            lines.append(
                f"    - {result.nodeid}: {result.reason}"
                if result.reason
                else f"    - {result.nodeid}"
            )
            lines += [f"        at {frame}" for frame in (where or {}).get(result.nodeid, ())[-1:]]
        if len(listed) < len(failed[key]):
            lines.append(f"    ... and {len(failed[key]) - len(listed)} more failed")
    if every_one and any(line.startswith("    ... and ") for line in lines):
        lines.append(f"every failed test, each with its reason: {every_one}")
    return lines


def _owner_order(key: str, yours: set[str]) -> tuple[bool, str, str]:
    """The candidates' own owners first (a drill's owner is the drill), then by package."""
    owner = OWNERS.get(key)
    package = owner.package if owner else ""
    return (package not in yours and key not in yours, package, key)


def _owner_head(
    key: str, failed: Sequence[TestResult], swapped: Sequence[str], yours: set[str]
) -> list[str]:
    owner = OWNERS.get(key)
    mechanism = owner.mechanism if owner else "unknown owner"
    package = owner.package if owner else "?"
    names: list[str] = []
    if swapped and package not in yours and key not in yours:  # a composed test
        used = {v for result in failed for v in result.variables if v in swapped}
        names = sorted(VARIABLES[v].package for v in used)
    ran = f"; ran your {', '.join(names)}" if names else ""
    lines = [f"{key}  [{package}] {mechanism}  ({len(failed)} failed{ran})"]
    if owner:
        lines.append(f"    repair: {owner.repair}")
        if owner.drills and owner.package != "drills":
            lines.append(f"    drills: {drill_labels(owner.drills)}")
        elif owner.related:  # a composed test's fault lies in the candidate it ran
            where = f"your {', '.join(names)}" if names else owner.package
            lines.append(f"    drills: {no_owning_drill(where, owner.related)}")
    return lines


# A failure that never ran the test's own check: the candidate was stopped earlier, the
# run ended first, or the run never reported it.
_NEVER_CHECKED = ("not run", "not reported", "skipped in")
# What a failed comparison of values says (torch's assert_close, this kit's assert_close).
_VALUE_MISMATCH = ("not close", "mismatched elements")
_STRUCTURAL = ("signature", "shape", "dtype")


def broken_clauses(failed: Sequence[TestResult], everything: Sequence[TestResult]) -> list[str]:
    """The clauses these failed tests show broken, in clause order.

    A test names every clause its calls rely on (a shape test also calls with the right
    signature), so a failed test alone does not break each clause it names: one naming a
    single clause breaks that clause; one naming several breaks those of them that no
    passed test vouches for (a clause another test checked and found kept is not what
    failed here), or, when every one is vouched for, all of them (nothing tells them
    apart). A test that never ran its own check (the candidate was stopped after an
    earlier failure) breaks none. And where a semantic clause is broken, a signature,
    shape or dtype clause whose every failed test failed on compared values is not: the
    values are the semantic clause's (a signature test that also checks the output fails
    with the attention it calls)."""
    vouched = {c for r in everything if r.outcome == "passed" and not r.held for c in r.clauses}
    blamed: dict[str, list[TestResult]] = defaultdict(list)
    for result in failed:
        if result.held or result.reason.startswith(_NEVER_CHECKED):
            continue
        named = set(result.clauses)
        if len(named) > 1:
            named = (named - vouched) or named
        for clause in named:
            blamed[clause].append(result)
    kinds = _kinds(blamed)
    if any(kinds.get(clause) == "semantics" for clause in blamed):
        for clause in [c for c in blamed if kinds.get(c) in _STRUCTURAL]:
            if all(_value_mismatch(result) for result in blamed[clause]):
                del blamed[clause]
    return sorted(blamed, key=clause_order)


def _kinds(blamed: Mapping[str, Sequence[TestResult]]) -> dict[str, str]:
    """Each blamed clause's kind, from the README its tests' package states it in."""
    kinds: dict[str, str] = {}
    for clause, results in blamed.items():
        test_file = Path(results[0].nodeid.split("::", 1)[0])
        kinds.update(clause_kinds(test_file, [clause]))
    return kinds


def _value_mismatch(result: TestResult) -> bool:
    return result.error == "AssertionError" and any(
        words in result.reason.lower() for words in _VALUE_MISMATCH
    )


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
    "broken_clauses",
    "drill_labels",
    "failed_owners",
    "graded_modules",
    "module_lines",
    "no_owning_drill",
    "routing_lines",
    "scorecard_lines",
    "table",
]
