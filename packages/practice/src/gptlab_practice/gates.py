"""Readiness gates (the full route's main ones), each met or not from the record, with its
evidence (which attempt, which day) or the nearest reason; a gate the project cannot grade
(an explanation, a design aloud) is listed as self-scored, never hidden. Prints nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .branches import m03_target
from .learned import verdict
from .mock import band, mock_scores, model_ratio
from .route import FULL, SEVEN_DAY
from .rubric import RUBRIC
from .stages import unit_named
from .store import Store

P_DRILL = re.compile(r"P\d\d")


@dataclass(frozen=True)
class Gate:
    name: str
    met: bool | None  # None: the project cannot see it (self-scored)
    evidence: str


def _learned(store: Store, item: str) -> tuple[bool, str]:
    """Met when the item has a clean re-solve on a later day (learned, as the kit defines)."""
    attempts = store.attempts(item)
    stages = {a.id: store.stages(a.id) for a in attempts}
    checks = {a.id: store.checks(a.id) for a in attempts}
    found = verdict(attempts, stages, checks)
    return found.learned, found.why


def _passed(store: Store, item: str) -> tuple[bool, str]:
    done = [a for a in store.attempts(item) if a.status == "done"]
    if done:
        return True, f"attempt {done[0].number} passed every stage, {done[0].day}"
    return False, "no attempt has passed every stage yet" if store.attempts(item) else "no attempt"


def _item_gate(store: Store, name: str, kit_name: str, rule: str) -> Gate:
    unit = unit_named(kit_name)
    if unit is None:
        return Gate(name, None, f"{kit_name} is not graded by this project yet (self-scored)")
    met, why = (_learned if rule == "learned" else _passed)(store, unit.package)
    return Gate(name, met, f"{unit.label}: {why}")


def _repaired_drills(store: Store) -> Gate:
    """Every P drill that missed (its own first wrong decision) or broke a build (started as
    a build's repair) needs a clean re-solve on a later day."""
    name = "every P drill that missed or broke a build has a clean later-day re-solve"
    owing = sorted(
        {
            a.mechanism
            for a in store.attempts()
            if P_DRILL.fullmatch(a.mechanism) and (a.first_wrong_owner or a.repair_of)
        }
    )
    if not owing:
        return Gate(name, True, "no P drill has missed or broken a build")
    still = [item for item in owing if not _learned(store, item)[0]]
    if still:
        return Gate(name, False, f"not yet re-solved clean on a later day: {', '.join(still)}")
    return Gate(name, True, f"re-solved clean on a later day: {', '.join(owing)}")


def route_of(store: Store) -> str:
    """The route whose gates apply: the diagnostic's, else the full 14-day route's."""
    fixed = store.route()
    return fixed.route if fixed is not None else FULL


def gates(store: Store) -> list[Gate]:
    """The gates of the learner's route. The kit lists the full route's main gates; the
    intermediate and 7-day routes "have their own gate lists", not given: those below are
    this project's reading of those routes' days."""
    route = route_of(store)
    found = [
        _item_gate(store, "P03 has a clean later-day re-solve", "P03", "learned"),
        _item_gate(store, "P11 has a clean later-day re-solve", "P11", "learned"),
        _repaired_drills(store),
    ]
    if route == SEVEN_DAY:
        found += _seven_day_builds(store)
    else:
        found += _full_builds(store, with_prefix_cache=route == FULL)
    found += [Gate(name, None, "self-scored") for name in _self_scored(route)]
    found.append(Gate("one full loop reaches ready", None, "self-scored (not run by this tool)"))
    found.append(_ready_mock(store))
    found.append(_model_ratio(store))
    return found


def _full_builds(store: Store, with_prefix_cache: bool) -> list[Gate]:
    """The full route's build gates; the intermediate route skips day 11, so its prefix-cache
    lane (and with it that gate)."""
    found = [
        _item_gate(
            store, "M01 reconstructed clean from blank, the tiers passing", "M01", "learned"
        ),
        _item_gate(store, "M02 passes its oracle and schema", "M02", "passed"),
        _item_gate(
            store,
            "M02's 45-minute layer reconstruction",
            "modern_lm:layer_reconstruction",
            "learned",
        ),
        _both(
            "M03 passes one timed path and a 45-minute reconstruction (immutability, parity)",
            _item_gate(store, "", _m03(store), "passed"),
            _item_gate(store, "", "cache_aware_lm:reconstruction", "passed"),
        ),
    ]
    if with_prefix_cache:
        found.append(
            _item_gate(
                store, "the prefix-cache suite passes (PyTorch lane)", "prefix_cache", "passed"
            )
        )
    found += [
        _item_gate(store, "M04 keeps logits", "M04", "passed"),
        _item_gate(store, "M05 passes its full matrix", "M05", "passed"),
        _item_gate(
            store,
            "M10 reaches logits in 75 minutes (its re-solve)",
            "fragment_lm:resolve",
            "passed",
        ),
    ]
    return found


def _seven_day_builds(store: Store) -> list[Gate]:
    """The 7-day route's builds: M01 (day 2), M02 as a delta on a supplied M01 (day 3), a
    scaffolded advanced M03 (day 4), M04 as a port of a supplied M02 (day 5); no M05, M10,
    prefix cache nor reconstructions (day 7 is for the clean re-solves of what missed)."""
    return [
        _item_gate(store, "M01 passes every stage (the tiers)", "M01", "passed"),
        _item_gate(store, "M02 (a delta on a supplied M01) passes its oracle", "M02", "passed"),
        _item_gate(store, "M03 (scaffolded, advanced) passes every stage", _m03(store), "passed"),
        _item_gate(store, "M04 (a port of a supplied M02) keeps logits", "M04", "passed"),
    ]


def _self_scored(route: str) -> tuple[str, ...]:
    """The gates a machine cannot see, by route."""
    if route == SEVEN_DAY:
        return (
            "one Triton kernel explained end to end (20 minutes, day 7)",
            "3 system designs (S03, S06, system mock 1), each in 45 minutes or less",
            "a deep dive survives 30 hostile questions (day 6)",
            "GP calibrations done (and a sibling if needed)",
        )
    return (
        "one Triton kernel explained end to end",
        "the request lifecycle drawn in 5 minutes",
        "KV capacity estimated",
        "3 system designs, each in 45 minutes or less",
        "a deep dive survives 30 hostile questions",
        "GP calibrations done (and a sibling if needed)",
    )


def _m03(store: Store) -> str:
    """The name M03's gates read: the build on the recorded branch (`branches`)."""
    fixed = store.route()
    return m03_target(fixed.m03_branch if fixed is not None else None)


def _both(name: str, first: Gate, second: Gate) -> Gate:
    """A gate of two parts: met when both are; the evidence of each."""
    if first.met is None or second.met is None:
        return Gate(name, None, f"{first.evidence}; {second.evidence}")
    return Gate(name, first.met and second.met, f"{first.evidence}; {second.evidence}")


def _ready_mock(store: Store) -> Gate:
    """A mock (a timed, frozen, judged round) scored 24/28 or more with every dim >= 2."""
    name = "one more mock or unseen PT reaches >= 24/28 with every dimension >= 2"
    scored = [(m, mock_scores(m)) for m in store.mocks() if len(mock_scores(m)) == len(RUBRIC)]
    for mock, scores in scored:
        if band(scores)[0] == "ready":
            return Gate(name, True, f"mock {mock.id} ({mock.prompt}), {mock.deadline:%Y-%m-%d}")
    if not scored:
        return Gate(name, False, "no mock scored yet (`mock --start`, then `mock --score`)")
    best = max(scored, key=lambda pair: sum(pair[1].values()))
    return Gate(name, False, f"best so far: mock {best[0].id}, {sum(best[1].values())}/28")


def _model_ratio(store: Store) -> Gate:
    """The kit's model-construction ratio, m >= ceil(n/2) by interview day (n graded rounds,
    m model rounds whose frozen copy ran a module end to end)."""
    m, n = model_ratio(store.mocks())
    need = -(-n // 2)
    name = "model-construction ratio: m >= ceil(n/2) of the graded mock rounds"
    if not n:
        return Gate(name, False, "no graded mock yet")
    return Gate(name, m >= need, f"{m} of {n} rounds ran a module end to end (needs {need})")
