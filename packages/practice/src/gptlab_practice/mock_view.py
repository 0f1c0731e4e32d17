"""What `mock` says: the draw and why, the deadline, and the rubric of a frozen grade: what
the machine saw per dimension beside the learner's 0-4 scores, the total /28 and its band."""

from __future__ import annotations

from .mock import band, mock_scores
from .rubric import RUBRIC
from .sampler import Draw
from .store import MockRecord


def drawn(draw: Draw) -> list[str]:
    if draw.case is None:
        return [f"nothing to draw: {draw.why}"]
    case = draw.case
    return [
        f"next mock: {case.id} {case.title} ({min(case.minutes, 60)}m)",
        f"  why: {draw.why}",
        "  `mock --start` begins it: the attempt is copied at its deadline and the copy graded",
    ]


def started(mock: MockRecord) -> list[str]:
    return [
        f"mock {mock.id}: {mock.prompt} ({mock.kind}, owner {mock.owner}), {mock.minutes}m:"
        f" the attempt is copied at {mock.deadline:%H:%M} and the copy graded (Ctrl-C: now)",
        f"  why: {mock.why}",
    ]


def rubric(mock: MockRecord) -> list[str]:
    head = f"mock {mock.id}: {mock.prompt} ({mock.kind}, owner {mock.owner}), {mock.minutes}m"
    if mock.tests_run is None:
        return [f"{head}: not graded"]
    frozen = f"{mock.frozen_at:%H:%M}" if mock.frozen_at else "?"
    lines = [
        f"{head}; frozen at {frozen}, graded by the judge: {mock.tests_passed}/{mock.tests_run}"
        f" tests passed; first wrong decision: {mock.first_wrong or '-'}",
        "rubric: what the machine saw | your score (0-4)",
    ]
    seen = dict(p.split("=", 1) for p in (mock.evidence or "").splitlines() if "=" in p)
    scores = mock_scores(mock)
    for key, what in RUBRIC:
        mine = str(scores[key]) if key in scores else "-"
        lines.append(f"  {key:<15} {seen.get(key, '-'):<46} | {mine}   ({what})")
    if len(scores) < len(RUBRIC):
        missing = " ".join(f"--score {k}=N" for k, _ in RUBRIC if k not in scores)
        lines.append(f"score yourself ({len(scores)} of {len(RUBRIC)} given): mock {missing}")
        return lines
    name, step = band(scores)
    lines.append(f"total {sum(scores.values())}/28: band {name}; next: {step}")
    return lines


def log(mocks: list[MockRecord]) -> list[str]:
    """The mock log: prompt, kind, owner, duration, frozen score, first wrong decision."""
    if not mocks:
        return []
    lines = ["mock log:"]
    for mock in mocks:
        score = f"{mock.tests_passed}/{mock.tests_run}" if mock.tests_run is not None else "-"
        scores = mock_scores(mock)
        total = f", {sum(scores.values())}/28" if len(scores) == len(RUBRIC) else ""
        lines.append(
            f"  {mock.deadline:%Y-%m-%d} mock {mock.id} {mock.prompt} {mock.kind} owner"
            f" {mock.owner}, {mock.minutes}m, frozen score {score}{total}, first wrong"
            f" {mock.first_wrong or '-'}"
        )
    return lines
