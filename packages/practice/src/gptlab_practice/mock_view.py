"""What `mock` says: the draw and why, the deadline, and the rubric of a frozen grade: what
the machine saw per dimension beside the learner's 0-4 scores, the total /28 and its band."""

from __future__ import annotations

from .mock import MODEL_KIND, ModelDraw, band, evidence_of, mock_scores, model_ratio
from .rubric import MODEL_RUBRIC, RUBRIC
from .sampler import Draw
from .store import MockRecord


def drawn(draw: Draw | ModelDraw) -> list[str]:
    if isinstance(draw, ModelDraw):
        model = draw.mock
        return [
            f"next mock: model mock {model.letter}, {model.title} ({model.minutes}m, the full"
            f" time), graded as {model.build} {model.package}",
            f"  the task: {model.task}",
            f"  why: {draw.why}",
            "  `mock --start` begins it from an empty file: copied at its deadline, the copy"
            " graded on the model-build rubric",
        ]
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


def rubric(mock: MockRecord, repair: str | None = None) -> list[str]:
    """A graded mock's rubric; `repair`: where a failed model mock sends the learner."""
    head = f"mock {mock.id}: {mock.prompt} ({mock.kind}, owner {mock.owner}), {mock.minutes}m"
    if mock.abandoned:
        return [f"{head}: abandoned at {mock.frozen_at:%H:%M} (no copy, no grade)"]
    if mock.tests_run is None:
        return [f"{head}: not graded"]
    model = mock.kind == MODEL_KIND
    frozen = f"{mock.frozen_at:%H:%M}" if mock.frozen_at else "?"
    named = "the model-build rubric" if model else "rubric"
    lines = [
        f"{head}; frozen at {frozen}, graded by the judge: {mock.tests_passed}/{mock.tests_run}"
        f" tests passed; first wrong decision: {mock.first_wrong or '-'}",
        f"{named}: what the machine saw | your score (0-4)",
    ]
    seen = evidence_of(mock)
    scores = mock_scores(mock)
    dimensions = MODEL_RUBRIC if model else RUBRIC
    for key, what in dimensions:
        mine = str(scores[key]) if key in scores else "-"
        lines.append(f"  {key:<15} {seen.get(key, '-'):<46} | {mine}   ({what})")
    if model and mock.first_wrong and repair:
        lines.append(f"failed: the first failed owner, {mock.first_wrong}: next `start {repair}`")
    if model:
        lines.append("  (a correctly shaped but nonsensical model is capped at 12, the kit says)")
    if len(scores) < len(dimensions):
        missing = " ".join(f"--score {k}=N" for k, _ in dimensions if k not in scores)
        lines.append(f"score yourself ({len(scores)} of {len(dimensions)} given): mock {missing}")
        return lines
    name, step = band(scores)
    if model and name != "ready":
        name, step = "not ready", "the first failed owner, then a clean re-solve of the build"
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
        end = "abandoned" if mock.abandoned else f"frozen score {score}{total}"
        lines.append(
            f"  {mock.deadline:%Y-%m-%d} mock {mock.id} {mock.prompt} {mock.kind} owner"
            f" {mock.owner}, {mock.minutes}m, {end}, first wrong {mock.first_wrong or '-'}"
        )
    m, n = model_ratio(mocks)
    lines.append(ratio_line(m, n))
    return lines


def ratio_line(m: int, n: int) -> str:
    """The kit's model-construction ratio: m >= ceil(n/2) by interview day."""
    need = -(-n // 2)
    state = "met" if m >= need else f"{need - m} more model round(s) needed"
    return (
        f"model-construction ratio: {m} of {n} graded rounds ran a module end to end"
        f" (needs {need}): {state}"
    )
