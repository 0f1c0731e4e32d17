"""`log`: the error log with the kit's fields, one entry per miss, from the record; exported
as CSV and as a markdown table. Cases are read from the catalogue."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.error_log import FIELDS
from gptlab_practice.sampler import DRILLS  # the catalogue, read through practice
from gptlab_practice.schedule import after_miss
from gptlab_practice.stages import units
from gptlab_practice.store import STORE_NAME, Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

Practise = Any
FakeClock = Any


def attempt(store: Store, item: str, clock: FakeClock, owner: str | None) -> None:
    """An attempt at `item`: a decided miss on `owner`, or (None) a clean pass."""
    now = clock()
    made = store.start_attempt(item, Path(f"/nowhere/{item}.py"), now, 30, 1)
    check = store.begin_check(made, 1, now)
    row = (1, "failed", 2, 1, owner, "why") if owner else (1, "passed", 3, 0, None, "")
    store.finish_check(check, [row], 1.0, now, {}, "took the view" if owner else None,
                       on_miss=after_miss(units()[item], now.date()))  # fmt: skip


def test_each_miss_is_an_entry_with_the_kit_s_fields(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    case = next(d for d in DRILLS.values() if d.id.startswith("PT") and d.family and d.delta)
    home.mkdir(parents=True)
    with Store(home / STORE_NAME) as store:
        attempt(store, case.id, clock, case.key)
        attempt(store, "P19", clock, "p19")
        clock.now += timedelta(days=1)
        attempt(store, "P19", clock, None)  # a clean re-solve from an empty file
    rows = list(csv.DictReader(io.StringIO(practise("log", "--csv").out)))
    assert tuple(rows[0]) == FIELDS
    transfer, canonical = rows
    assert transfer["drill"] == case.id and transfer["mode"] == "transfer"
    assert transfer["canonical_owner"] == case.owner and transfer["family"] == case.family
    assert transfer["contract_delta"] == case.delta and transfer["source_owner"] == case.key
    assert transfer["first_wrong_decision"] == f'{case.key} (stage 1): "took the view"'
    assert transfer["next_resolve"].startswith(case.owner)  # the owner's re-solve first
    assert transfer["miss"] == "(yours)" and transfer["clean_from_blank_editor"] == "no"
    assert canonical["drill"] == "P19" and canonical["mode"] == "canonical"
    assert canonical["previously_seen"] == "no" and canonical["clean_from_blank_editor"] == "yes"
    assert canonical["date"] == "2026-12-01"
    markdown = practise("log").out.splitlines()
    assert markdown[0] == "| " + " | ".join(FIELDS) + " |" and len(markdown) == 4
