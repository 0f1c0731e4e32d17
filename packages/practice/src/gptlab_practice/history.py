"""`history`: a table per mechanism and a plot (`<home>/history.png`, needs matplotlib)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .learned import verdict
from .stages import Mechanism
from .store import Attempt, CheckRecord, StageRecord, Store

PLOT_NAME = "history.png"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def _stage_cell(record: StageRecord | None) -> str:
    if record is None:
        return "-"
    if record.seconds is None:
        return "open"
    mark = "!" if record.seconds > record.minutes * 60 else ""
    return f"{duration(record.seconds)}{mark}"


def table(
    mechanism: Mechanism,
    attempts: list[Attempt],
    stages: dict[int, list[StageRecord]],
    checks: dict[int, list[CheckRecord]] | None = None,
) -> list[str]:
    """Lines: attempts, days, time per stage (! = over budget), first wrong decisions by owner."""
    days = sorted({a.day for a in attempts})
    learned = verdict(attempts, stages, checks)
    lines = [
        f"{mechanism.package}: {len(attempts)} attempt(s) on {len(days)} day(s)"
        f" ({', '.join(days)}); learned: {'yes' if learned.learned else 'not yet'}: {learned.why}"
    ]
    numbers = [s.number for s in mechanism.stages]
    header = [
        "attempt",
        "day",
        "status",
        *(f"s{n}" for n in numbers),
        "total",
        "ref",
        "ledger",
        "first wrong",
    ]
    budget = [
        "budget",
        "",
        "",
        *(f"{s.minutes}m" for s in mechanism.stages),
        f"{mechanism.total_minutes}m",
        "",
        "",
        "",
    ]
    rows = [header, budget]
    for attempt in attempts:
        records = {r.stage: r for r in stages.get(attempt.id, [])}
        passed = [r.seconds for r in records.values() if r.seconds is not None]
        wrong = attempt.first_wrong_owner or "-"
        if attempt.first_wrong_owner and attempt.first_wrong_stage:
            wrong += f" (s{attempt.first_wrong_stage})"
        rows.append(
            [
                str(attempt.number),
                attempt.day,
                attempt.status,
                *(_stage_cell(records.get(n)) for n in numbers),
                duration(sum(passed)) if passed else "-",
                "opened" if attempt.reference_opened_at else "-",
                _ledger((checks or {}).get(attempt.id, [])),
                wrong,
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    owners = Counter(a.first_wrong_owner for a in attempts if a.first_wrong_owner)
    if owners:
        lines.append(
            "  first wrong decisions by owner: "
            + ", ".join(f"{o} {n}" for o, n in owners.most_common())
        )
    return lines


def _ledger(checks: list[CheckRecord]) -> str:
    """The ledger at the attempt's last finished check: filled, empty, or not recorded."""
    finished = [c for c in checks if c.outcome in ("passed", "failed")]
    if not finished or finished[-1].ledger_filled is None:
        return "-"
    return "filled" if finished[-1].ledger_filled else "empty"


def plot(store: Store, practised: list[Mechanism], target: Path) -> str:
    """Draw minutes per stage of every attempt against the budget; returns what happened."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (
            "history.png not drawn: matplotlib is not installed "
            "(pip install 'gptlab-practice[plot]'; `nox -s practice` has it)"
        )
    figure, axes = plt.subplots(len(practised), 1, figsize=(7, 2.6 * len(practised)), squeeze=False)
    for axis, mechanism in zip(axes[:, 0], practised, strict=True):
        attempts = store.attempts(mechanism.package)
        bottoms = [0.0] * len(attempts)
        for stage in mechanism.stages:
            heights = []
            for attempt in attempts:
                record = next(
                    (r for r in store.stages(attempt.id) if r.stage == stage.number), None
                )
                heights.append((record.seconds or 0.0) / 60 if record else 0.0)
            axis.bar(
                range(1, len(attempts) + 1),
                heights,
                width=0.6,
                bottom=bottoms,
                label=f"stage {stage.number}",
            )
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        axis.axhline(mechanism.total_minutes, color="black", linestyle="--", label="budget")
        axis.set_title(mechanism.package)
        axis.set_xlabel("attempt")
        axis.set_ylabel("minutes")
        axis.set_xticks(range(1, len(attempts) + 1))
        axis.set_xlim(0.4, len(attempts) + 0.6)
        axis.legend(fontsize=6, ncol=4)
    figure.tight_layout()
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return f"plot: {target}"
