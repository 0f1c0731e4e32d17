"""`plan`'s picture, `<home>/route.png` (needs matplotlib, the `plot` extra): the route's days
as a strip (finished, today, protected, open, ahead) and the mocks' rubric totals over time
against the ready line (24/28)."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from .plan import day_of, route_length
from .store import MockRecord, RouteRecord

PICTURE_NAME = "route.png"
READY_TOTAL = 24
COLOURS = {"done": "#2a9d8f", "today": "#e9c46a", "open": "#e76f51", "ahead": "#d9d9d9"}


def day_states(
    route: RouteRecord, today_number: int, finished: dict[str, frozenset[str]]
) -> list[str]:
    """Each day: done (something finished that day), today, open (past, nothing finished),
    or ahead."""
    first = date.fromisoformat(route.day)
    states = []
    for number in range(1, route_length(route.route) + 1):
        when = (first + timedelta(days=number - 1)).isoformat()
        if finished.get(when):
            states.append("done")
        elif number == today_number:
            states.append("today")
        else:
            states.append("open" if number < today_number else "ahead")
    return states


def draw(
    route: RouteRecord,
    today_number: int,
    finished: dict[str, frozenset[str]],
    totals: list[tuple[MockRecord, int]],
    target: Path,
) -> str:
    """Draw the picture; returns the line `plan` prints about it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (
            f"{PICTURE_NAME} not drawn: matplotlib is not installed "
            "(pip install 'gptlab-practice[plot]'; `nox -s practice` has it)"
        )
    states = day_states(route, today_number, finished)
    figure, (strip, scores) = plt.subplots(2, 1, figsize=(8, 4.2), height_ratios=(1, 2))
    for index, state in enumerate(states):
        day = day_of(route.route, index + 1, route.protected, route.m03_branch)
        strip.bar(
            index + 1, 1, color=COLOURS[state], edgecolor="black" if day.protected else "none"
        )
        strip.text(index + 1, 0.5, f"d{index + 1}", ha="center", va="center", fontsize=7)
    strip.set_yticks([])
    strip.set_xticks([])
    strip.set_title(
        f"{route.route} route from {route.day}: done, today, open, ahead (outlined: protected)",
        fontsize=8,
    )
    if totals:
        scores.plot(range(1, len(totals) + 1), [t for _, t in totals], marker="o")
        for index, (mock, total) in enumerate(totals):
            scores.annotate(mock.prompt, (index + 1, total), fontsize=7)
    scores.set_xticks(range(1, len(totals) + 1))
    scores.set_xlim(0.5, max(len(totals), 1) + 0.5)
    scores.axhline(READY_TOTAL, color="black", linestyle="--", label="ready (24/28)")
    scores.set_ylim(0, 28)
    scores.set_xlabel("mock")
    scores.set_ylabel("rubric total /28")
    scores.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return f"picture: {target}"
