"""The lists and tables: what `start` can begin, `due`, `status` (within 120 columns) and
`history`. Each reads the record through the workbench and returns lines."""

from __future__ import annotations

import io
import textwrap
from datetime import datetime

from gptlab_drills.catalogue import DRILLS

from .history import PLOT_NAME, duration, plot, table
from .items import label
from .learned import verdict
from .messages import sibling_why, step_name, when_due
from .sampler import owner_item, unresolved_items
from .stages import Mechanism, kernels, mechanisms, resolves, units
from .store import Attempt, CheckRecord, Review, StageRecord
from .workbench import Workbench

STATUS_WIDTH = 120  # `status` fits a 120-column terminal: long cells wrap inside their column


def columns(rows: list[list[str]], width: int) -> list[str]:
    """Rows as aligned columns (the first row is the header) within `width`: rich's table
    layout, which wraps a cell inside its column only when the row would not fit."""
    from rich.console import Console
    from rich.table import Table

    grid = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="", expand=False)
    for index, title in enumerate(rows[0]):  # the first column (a name) and headers never wrap
        first = max((len(row[0]) for row in rows), default=0) if index == 0 else len(title)
        grid.add_column(title, overflow="fold", no_wrap=index == 0, min_width=first)
    for row in rows[1:]:
        grid.add_row(*row)
    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False)
    with console.capture() as captured:
        console.print(grid)
    return [line.rstrip() for line in captured.get().splitlines()]


def catalogue() -> list[str]:
    """What `start` can begin, for `start` without ITEM."""
    lines = ["start one of these: `start ITEM`", "mechanisms (stages, minutes in all):"]
    lines += [
        f"  {m.label:<20} {len(m.stages)} stage(s), {m.total_minutes}m"
        for m in mechanisms().values()
    ]
    lines.append("named re-solves (one stage, from an empty file, on a later day):")
    lines += [
        f"  {r.package}  {r.stages[0].minutes}m: {r.stages[0].build}" for r in resolves().values()
    ]
    drills = [u.package for u in units().values() if u.drill and u.drill.id not in kernels()]
    lines += [
        "drills (the repair lane):",
        *textwrap.wrap(", ".join(drills), 88, initial_indent="  ", subsequent_indent="  "),
    ]
    if kernels():
        lines.append("Triton kernels (the Triton lane, one stage each):")
        lines += [
            f"  {kernel.id}  {kernel.minutes:>3}m: {kernel.title}" for kernel in kernels().values()
        ]
    return lines


def due(bench: Workbench, today: str) -> list[str]:
    """Pending re-solves due today or overdue, oldest first; else the next one ahead."""
    now_due, ahead = bench.due(today)
    if not now_due:
        step = step_name(ahead.step) if ahead else ""
        later = f"; next: {label(ahead.item)} on {ahead.due_day} ({step})" if ahead else ""
        return [f"nothing due today ({today}){later}"]
    lines = [f"due on {today} (oldest first):"]
    unresolved = unresolved_items(bench.store)
    for review in now_due:
        lines.append("  " + review_line(bench, review, today))
        if sibling_why(review):
            lines.append(f"    why: {sibling_why(review)}")
            owner = DRILLS[review.item].owner if review.item in DRILLS else ""
            if owner and owner_item(owner) in unresolved:
                lines.append(
                    f"    wait: its owner {owner} is unresolved; re-solve {owner} clean first"
                )
    return lines


def review_line(bench: Workbench, review: Review, today: str) -> str:
    miss = bench.store.attempt(review.miss_attempt_id)
    late = " (overdue)" if review.due_day < today else ""
    return (
        f"{review.due_day}{late}  {label(review.item)}: re-solve {when_due(review.step)},"
        f" {how_to_begin(bench, review.item)}; miss: {miss.mechanism} attempt {miss.number},"
        f" {miss.first_wrong_owner or '?'}"
    )


def how_to_begin(bench: Workbench, item: str) -> str:
    """How a re-solve of `item` begins: `start` from an empty file, unless an attempt is
    in progress there (`start` refuses it): then go on with it, or archive it."""
    active = bench.store.active(item)
    if not active:
        return f"from an empty file (`start {item}`)"
    return (
        f"once attempt {active[-1].number}, in progress, is finished (`check {item}` or"
        f" `watch {item}`) or archived (`start {item} --new`, from an empty file)"
    )


def _stages_of(bench: Workbench, attempts: list[Attempt]) -> dict[int, list[StageRecord]]:
    return {a.id: bench.store.stages(a.id) for a in attempts}


def _checks_of(bench: Workbench, attempts: list[Attempt]) -> dict[int, list[CheckRecord]]:
    return {a.id: bench.store.checks(a.id) for a in attempts}


def practised(bench: Workbench) -> list[Mechanism]:
    """Every mechanism, then the drills that have an attempt or a re-solve."""
    store = bench.store
    seen = {a.mechanism for a in store.attempts()} | {r.item for r in store.reviews()}
    return [u for u in units().values() if u.drill is None or u.package in seen]


def _next_review(bench: Workbench, item: str) -> str:
    pending = bench.pending(item)
    return f"{pending.due_day} ({step_name(pending.step)})" if pending else "-"


def wrap_names(head: str, names: list[str], width: int) -> list[str]:
    """`head a, b, c` wrapped at `width` between names, never inside one: a model build's
    label (`M03 cache_aware_modern`) stays on one line."""
    lines, line = [], head
    for index, name in enumerate(names):
        word = name + ("," if index < len(names) - 1 else "")
        if len(line) + 1 + len(word) > width and line.strip():
            lines.append(line)
            line = "  " + word
        else:
            line += " " + word
    return [*lines, line]


def status(bench: Workbench, now: datetime) -> list[str]:
    """One row per item, at most STATUS_WIDTH columns; why each practised item is not
    learned yet, repairs and unfinished checks on lines of their own below."""
    store = bench.store
    header = ["item", "attempt", "stage", "in stage", "first wrong decision"]
    rows = [[*header, "next re-solve", "learned"]]
    below: list[str] = []
    untried: list[str] = []  # named in one line, not a row each
    for mechanism in practised(bench):
        attempts = store.attempts(mechanism.package)
        if not attempts and _next_review(bench, mechanism.package) == "-":
            untried.append(mechanism.label)
            continue
        learned = verdict(attempts, _stages_of(bench, attempts), _checks_of(bench, attempts))
        pending = bench.pending(mechanism.package)
        if pending is not None and sibling_why(pending):
            below.append(f"{sibling_why(pending)} (due {pending.due_day})")
        if not attempts:
            row = [mechanism.label, "-", "-", "-", "-"]
            rows.append([*row, _next_review(bench, mechanism.package), "no attempt"])
            continue
        latest = attempts[-1]
        in_stage = "-"
        if latest.status == "active":
            bench.unit_of(latest)
            record = next((r for r in store.stages(latest.id) if r.stage == latest.stage), None)
            if record is None:
                raise store.damaged(
                    f"{latest.mechanism} attempt {latest.number} has no row for its stage"
                    f" {latest.stage}"
                )
            spent = record.spent(now)
            late = "!" if spent > record.minutes * 60 else ""
            in_stage = f"{duration(spent)} of {record.minutes}m{late}"
            drilling = [a for a in store.active() if a.repair_of == latest.id]
            if drilling:
                below.append(
                    f"{latest.mechanism} stage {latest.stage}: its clock is paused while"
                    f" repairing in {drilling[-1].mechanism}"
                )
        wrong = (
            f"{latest.first_wrong_owner} (s{latest.first_wrong_stage})"
            if latest.first_wrong_owner
            else "-"
        )
        if not learned.learned:
            below.append(f"{mechanism.package} not learned yet: {learned.why}")

        rows.append(
            [
                mechanism.label,
                f"{latest.number} {latest.status}",
                f"{latest.stage}/{latest.stage_count}",
                in_stage,
                wrong,
                _next_review(bench, mechanism.package),
                f"yes ({learned.why})" if learned.learned else "not yet",
            ]
        )
    lines = columns(rows, STATUS_WIDTH) if len(rows) > 1 else []
    if untried:
        what = "no attempt yet" if len(rows) > 1 else "no attempt yet at any item"
        lines += wrap_names(f"{what} (`start ITEM`):", untried, STATUS_WIDTH)
    for attempt in store.attempts():
        interrupted = [c for c in store.checks(attempt.id) if c.outcome in ("running", "error")]
        if interrupted:
            below.append(
                f"{len(interrupted)} check(s) of {attempt.mechanism} attempt "
                f"{attempt.number} did not finish (interrupted)"
            )
    for note in below:
        lines += textwrap.wrap(note, STATUS_WIDTH, initial_indent="note: ", subsequent_indent="  ")
    return lines


def history(bench: Workbench, chosen: list[Mechanism]) -> list[str]:
    """A table per practised item with its notes and probe answers, then the plot's line."""
    store = bench.store
    lines: list[str] = []
    for mechanism in chosen:
        attempts = store.attempts(mechanism.package)
        checks = _checks_of(bench, attempts)
        lines += table(mechanism, attempts, _stages_of(bench, attempts), checks)
        for attempt in attempts:
            for at, text in store.notes(attempt.id):
                lines.append(f"  attempt {attempt.number} note, {at:%Y-%m-%d %H:%M}: {text}")
            for check in checks[attempt.id]:
                for number, question, answer in store.probe_answers(check.id):
                    lines.append(f"  attempt {attempt.number} probe {number}: {question}")
                    lines.append(f"    > {answer}")
        lines.append("")
    lines.append(plot(store, chosen, bench.home / PLOT_NAME))
    return lines
