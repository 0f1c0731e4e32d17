"""The model-build rubric where a machine can see it: per dimension, the contract tests passed
and the owners that failed, read from rows shaped like the `rubric` field of `grade --json`
(a mock's frozen grade writes them; a check's own run is read into the same rows by
`grader.rubric_rows`, by the same rule: each owner's dimension in the routing table). A
dimension no test sees is the learner's alone, and says so; no score is invented. Prints
nothing."""

from __future__ import annotations

from collections.abc import Sequence

from .rubric import MODEL_RUBRIC

READY_TOTAL = 24  # the kit: ready at 24/28 with every dimension at 2 or above
YOURS = "no test sees it: your own score"


def build_evidence(rubric: Sequence[dict[str, object]], build: str) -> dict[str, str]:
    """The model-build rubric's evidence from grade's `rubric` rows of one build (M02): per
    dimension, the contract tests passed and the owners that failed; a dimension no test
    sees is the learner's alone, and says so."""
    rows = {str(r.get("dimension")): r for r in rubric if r.get("build") == build}
    evidence = {}
    for key, dimension in MODEL_RUBRIC:
        row = rows.get(dimension)
        run = int(str(row.get("run", 0))) if row else 0
        if not row or not run:
            evidence[key] = YOURS
            continue
        failed = row.get("failed_owners") or []
        owners = (
            f"; failed: {', '.join(map(str, failed))}"
            if isinstance(failed, list) and failed
            else ""
        )
        evidence[key] = f"{row.get('passed')}/{run} contract tests passed{owners}"
    return evidence


def build_ready(scores: dict[str, int]) -> tuple[bool, str]:
    """(ready, why) for a full set of the learner's seven 0-4 scores, by the kit's rule."""
    total = sum(scores.values())
    low = sorted(key for key, value in scores.items() if value < 2)
    if total >= READY_TOTAL and not low:
        return True, f"{total}/28, none below 2: ready"
    why = [f"{total}/28" + (" (needs 24)" if total < READY_TOTAL else "")]
    if low:
        why.append(f"below 2: {', '.join(low)}")
    return False, "; ".join(why) + ": not ready"
