"""The failure-to-owner routing table, read from routing.toml (kept once, as data)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Owner:
    """The mechanism that owns a failed invariant, and where to repair it."""

    key: str
    package: str
    mechanism: str
    repair: str
    # Repair-lane drills that own the failed invariant (ids such as "P19"), first to start.
    drills: tuple[str, ...] = ()
    # Drills that practise a neighbouring skill when no drill owns the invariant (`drills`
    # empty): named as related, never as the place to repair it.
    related: tuple[str, ...] = ()
    # A model build's owner: the rubric dimension its invariant belongs to (`rubric`).
    rubric: str | None = None


def _load() -> dict[str, Owner]:
    text = resources.files(__package__).joinpath("routing.toml").read_text(encoding="utf-8")
    return {
        key: Owner(
            key=key,
            package=row["package"],
            mechanism=row["mechanism"],
            repair=row["repair"],
            drills=tuple(row.get("drills", ())),
            related=tuple(row.get("related", ())),
            rubric=row.get("rubric"),
        )
        for key, row in tomllib.loads(text).items()
    }


OWNERS: dict[str, Owner] = _load()


def markdown_table() -> str:
    """The routing table as the top-level README shows it (regenerate it from here).

    The drills' own owners (package `drills`, one per drill) are listed in the drills'
    README instead: the mechanisms' rows name them in their `drills` column.
    """
    lines = [
        "| owner | package | mechanism | repair target | drills |",
        "|---|---|---|---|---|",
    ]
    lines += [readme_row(o) for o in OWNERS.values() if o.package != "drills"]
    return "\n".join(lines)


def readme_row(owner: Owner) -> str:
    drills = ", ".join(owner.drills) or "-"
    if not owner.drills and owner.related:
        drills = f"none owns it (related: {', '.join(owner.related)})"
    return f"| `{owner.key}` | {owner.package} | {owner.mechanism} | {owner.repair} | {drills} |"
