"""What the tool says between checks: `due` never offers a `start` that would be refused,
`status` keeps every name and header whole and names the untried items in one line, a
decided miss names its first broken clause, and a home that is a file is refused."""

from __future__ import annotations

from itertools import takewhile
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.cli import main
from gptlab_practice.stages import units
from gptlab_practice.store import STORE_NAME, Store
from gptlab_practice.verdicts import StageVerdict

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
Practise = Any
FakeClock = Any


def miss(store: Store, item: str, owner: str, clock: FakeClock, stages: int = 1) -> int:
    """An attempt whose deciding check failed on `owner`: a miss, its re-solves scheduled."""
    from gptlab_practice.schedule import after_miss

    now = clock()
    attempt = store.start_attempt(item, Path(f"/nowhere/{item}.py"), now, 45, stages)
    check = store.begin_check(attempt, 1, now)
    rows = [(1, "failed", 3, 4, owner, "why")]
    store.finish_check(
        check, rows, 1.0, now, {1: 45}, None, on_miss=after_miss(units()[item], now.date())
    )
    return attempt


def test_due_offers_no_start_while_an_attempt_of_the_item_is_in_progress(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    home.mkdir(parents=True)
    with Store(home / STORE_NAME) as store:
        miss(store, "P19", "p19", clock)  # still active: its re-solve is due today
    due = practise("due").out
    assert "P19: re-solve later the same day" in due
    assert "from an empty file (`start P19`)" not in due  # `start` would refuse it
    assert "once attempt 1, in progress, is finished (`check P19` or `watch P19`)" in due
    assert "archived (`start P19 --new`, from an empty file)" in due


def test_due_offers_start_once_no_attempt_is_in_progress(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    home.mkdir(parents=True)
    with Store(home / STORE_NAME) as store:
        miss(store, "P19", "p19", clock)
    practise("start", "P19", "--new")  # archived: a fresh attempt is now the one in progress
    due = practise("due").out
    assert "once attempt 2, in progress" in due


def test_status_keeps_names_and_headers_whole_and_sums_up_the_untried(
    home: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(parents=True)
    with Store(home / STORE_NAME) as store:
        miss(store, "modern_lm:layer_reconstruction", "modern_attention_rope_positions", clock)
        miss(store, "speculative", "speculative_acceptance_accounting", clock, stages=2)
        miss(store, "PT17", "pt17", clock, stages=2)
    assert main(["--home", str(home), "status"], clock=clock) == 0
    lines = capsys.readouterr().out.splitlines()
    print("\n".join(lines))
    assert max(len(line) for line in lines) <= 120
    header = lines[0].split()
    assert header[:4] == ["item", "attempt", "stage", "in"]
    assert "first wrong decision" in lines[0] and "next re-solve" in lines[0]
    rows = [line.split()[0] for line in lines[1:] if line and not line.startswith(("note", " "))]
    assert "modern_lm:layer_reconstruction" in rows  # never folded onto a second line
    assert not any(line.lstrip().startswith("tion") for line in lines)
    assert not any(line.startswith(("tinygpt", "kv_cache")) for line in lines)  # no row each
    at = next(
        i for i, line in enumerate(lines) if line.startswith("no attempt yet (`start ITEM`): ")
    )
    wrapped = [lines[at], *takewhile(lambda line: line.startswith("  "), lines[at + 1 :])]
    untried = " ".join(" ".join(wrapped).split())
    assert "tinygpt" in untried and "kv_cache" in untried
    assert "M03 cache_aware_modern" in untried  # a label is never split across lines
    assert "speculative" not in untried.split(":", 1)[1]  # practised: a row of its own


def test_status_of_an_empty_home_is_one_line(
    home: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(home), "status"], clock=clock) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("no attempt yet at any item (`start ITEM`): M01 tinygpt, ")
    assert all(line.startswith("  ") for line in out[1:])  # one sentence, wrapped


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_home_that_is_a_file_is_refused_naming_where_it_came_from(
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    clock: FakeClock,
) -> None:
    home = tmp_path / "notes.txt"
    home.write_text("a learner's notes\n")
    argv = ["--home", str(home)] if how == "option" else []
    if how == "environment":
        monkeypatch.setenv("GPTLAB_PRACTICE_HOME", str(home))
    assert main([*argv, "status"], clock=clock) == 2
    err = capsys.readouterr().err
    named = f"--home {home}" if how == "option" else f"$GPTLAB_PRACTICE_HOME={home}"
    assert f"{named}: not a folder (a file is there)" in err
    assert home.read_text() == "a learner's notes\n"  # left as it was


def test_a_decided_miss_names_its_first_broken_clause() -> None:
    from gptlab_practice.messages import clause_line

    assert clause_line(ROOT, "P19.6").startswith("P19.6 (semantics) grouped queries")
    assert clause_line(ROOT, "P99.1") == "P99.1"  # stated nowhere: the id alone
    verdict = StageVerdict(1, False, 3, [], "why", ("P19.6",))
    assert verdict.broken == ("P19.6",)
