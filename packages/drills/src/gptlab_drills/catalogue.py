"""The drills of the repair lane, read from catalogue.toml (kept once, as data).

A drill is one small module of this package (`gptlab_drills.p19`), graded through its
own variable (`DRILL_P19_MODULE`) by the suite in `tests/p19/`. Adding a drill is
adding a module, a table in catalogue.toml and a test folder: no new code path.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

KINDS = ("canonical", "debug", "transfer", "profile")


@dataclass(frozen=True)
class Drill:
    """One drill: the kit's facts about it and how an attempt at it is graded."""

    id: str  # "P19", "PT17"
    title: str
    difficulty: str  # E, M or H
    minutes: int  # the time box, tests and explanation included
    kind: str  # canonical (P), debug (a supplied broken artifact), transfer (PT), profile
    graded: tuple[str, ...]  # names an attempt must define
    stems: tuple[str, ...]  # file stems an attempt folder may use ("p19", "decode_attention")
    probes: tuple[str, ...]  # three questions, answered without reopening the code
    owner: str = ""  # a PT case's canonical owner ("P05", "M01")
    family: str = ""  # a PT case's family in the kit's routing table ("layout", "attention")
    delta: str = ""  # a PT case's contract delta from its owner, in a few words
    mock_eligible: bool = False  # a PT case the mocks may draw (the kit: 45 minutes or less)
    # Modules a grading run imports before it forks, when this drill is graded.
    preload: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Lower-case id: the routing owner of its tests and its test folder's name."""
        return self.id.lower()

    @property
    def variable(self) -> str:
        return f"DRILL_{self.id}_MODULE"

    @property
    def module(self) -> str:
        """The reference module."""
        return f"gptlab_drills.{self.key}"

    @property
    def suite(self) -> str:
        """Its contract suite, relative to the repository root (tests are not installed)."""
        return f"packages/drills/tests/{self.key}"

    @property
    def label(self) -> str:
        """`P19 single-token decode attention (45m)`: how routing names it."""
        return f"{self.id} {self.title} ({self.minutes}m)"

    def starting_artifact(self) -> Traversable | None:
        """A debug case's supplied broken file, or a profile case's supplied slow loop
        (`artifacts/<key>_start.py`), else None."""
        if self.kind not in ("debug", "profile"):
            return None
        return resources.files(__package__).joinpath("artifacts", f"{self.key}_start.py")

    def failing_test(self) -> Traversable | None:
        """A debug case's supplied failing test (`artifacts/test_<key>_start.py`), else None."""
        if self.kind != "debug":
            return None
        return resources.files(__package__).joinpath("artifacts", f"test_{self.key}_start.py")


def _load() -> dict[str, Drill]:
    text = resources.files(__package__).joinpath("catalogue.toml").read_text(encoding="utf-8")
    drills: dict[str, Drill] = {}
    for drill_id, row in tomllib.loads(text).items():
        drill = Drill(
            id=drill_id,
            title=row["title"],
            difficulty=row["difficulty"],
            minutes=int(row["minutes"]),
            kind=row["kind"],
            graded=tuple(row["graded"]),
            stems=tuple(row["stems"]),
            probes=tuple(row["probes"]),
            owner=row.get("owner", ""),
            family=row.get("family", ""),
            delta=row.get("delta", ""),
            mock_eligible=bool(row.get("mock_eligible", False)),
            preload=tuple(row.get("preload", ())),
        )
        if drill.kind not in KINDS:
            raise ValueError(f"catalogue.toml [{drill_id}]: kind must be one of {KINDS}")
        drills[drill_id] = drill
    return drills


DRILLS: dict[str, Drill] = _load()


def find(drill_id: str) -> Drill:
    """The drill with this id, in any case (`p19`, `P19`); ValueError naming it if none."""
    if not isinstance(drill_id, str):
        raise TypeError(f"drill_id must be a str, got {type(drill_id).__name__}")
    drill = DRILLS.get(drill_id.strip().upper())
    if drill is None:
        raise ValueError(
            f"drill_id {drill_id!r} is not a drill: expected one of {', '.join(DRILLS)}"
        )
    return drill


__all__ = ["DRILLS", "KINDS", "Drill", "find"]
