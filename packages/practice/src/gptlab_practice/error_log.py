"""The error log with the kit's fields, one entry per miss (an attempt that recorded a first
wrong decision), built from the record; exported as CSV or a markdown table. Fields the
machine cannot know (the miss class, the failure or cancellation invariant, the allocation
and synchronisation surprise) are left for the learner to fill. Prints nothing."""

from __future__ import annotations

import csv
import io

from gptlab_drills.catalogue import DRILLS

from .store import Attempt, Store

FIELDS = (
    "drill",
    "canonical_owner",
    "source_owner",
    "family",
    "language",
    "mode",
    "contract_delta",
    "previously_seen",
    "date",
    "miss",
    "first_wrong_decision",
    "owning_invariant",
    "failure_or_cancellation_invariant",
    "allocation_and_synchronization_surprise",
    "next_resolve",
    "clean_from_blank_editor",
)
LEARNER_FILLS = "(yours)"  # a field the machine cannot see


def entries(store: Store) -> list[dict[str, str]]:
    """One row per miss, oldest first."""
    from .grader import repair_drills, repair_target

    attempts = store.attempts()
    rows = []
    for attempt in attempts:
        owner = attempt.first_wrong_owner
        if owner is None:
            continue
        case = DRILLS.get(attempt.mechanism)
        transfer = case is not None and case.id.startswith("PT")
        canonical = (
            case.owner
            if transfer and case is not None
            else attempt.mechanism
            if case is not None
            else next(iter(repair_drills(owner, attempt.mechanism)), attempt.mechanism)
        )
        note = f': "{attempt.first_wrong_note}"' if attempt.first_wrong_note else ""
        rows.append(
            {
                "drill": attempt.mechanism,
                "canonical_owner": canonical,
                "source_owner": owner,
                "family": case.family if case else "",
                "language": "python",
                "mode": "transfer" if transfer else "canonical",
                "contract_delta": case.delta if case else "",
                "previously_seen": "yes" if _seen_before(attempts, attempt) else "no",
                "date": attempt.day,
                "miss": LEARNER_FILLS,
                "first_wrong_decision": f"{owner} (stage {attempt.first_wrong_stage}){note}",
                "owning_invariant": repair_target(owner)[1] or owner,
                "failure_or_cancellation_invariant": LEARNER_FILLS,
                "allocation_and_synchronization_surprise": LEARNER_FILLS,
                "next_resolve": _next_resolve(store, attempt),
                "clean_from_blank_editor": "yes" if _clean_later(attempts, attempt) else "no",
            }
        )
    return rows


def _seen_before(attempts: list[Attempt], attempt: Attempt) -> bool:
    return any(a.mechanism == attempt.mechanism and a.id < attempt.id for a in attempts)


def _clean_later(attempts: list[Attempt], attempt: Attempt) -> bool:
    """A later attempt at the item, from an empty file, finished clean."""
    return any(
        a.mechanism == attempt.mechanism
        and a.id > attempt.id
        and a.status == "done"
        and a.started_from == "empty"
        and a.first_wrong_owner is None
        and a.reference_opened_at is None
        for a in attempts
    )


def _next_resolve(store: Store, attempt: Attempt) -> str:
    pending = [
        r for r in store.reviews() if r.miss_attempt_id == attempt.id and r.status == "pending"
    ]
    return f"{pending[0].item} {pending[0].due_day}" if pending else "-"


def as_csv(rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def as_markdown(rows: list[dict[str, str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(FIELDS) + " |", "|" + "---|" * len(FIELDS)]
    lines += ["| " + " | ".join(cell(row[f]) for f in FIELDS) + " |" for row in rows]
    return "\n".join(lines) + "\n"
