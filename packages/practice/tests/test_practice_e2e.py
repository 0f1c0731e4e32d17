"""The practice loop end to end, on a fake clock: start, fail, record, repair, pass, re-solve.

Each check is a real grader run over the contract suites (one pytest process with
one xdist worker): these tests cost a few grader runs each.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.sheet import LEDGER

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
KNOWN_BAD = ROOT / "integration_tests" / "known_bad"
FAITHFUL = ROOT / "integration_tests" / "faithful"
Practise = Any  # the conftest's runner: practise(*argv) -> Run(code, out, err)
FakeClock = Any


def put(source: Path, target: Path) -> None:
    """Copy a candidate over the learner's attempt file (what pasting it in would do)."""
    shutil.copyfile(source, target)


def rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "practice.sqlite3") as db:
        return list(db.execute(sql))


def test_tinygpt_seven_stages(practise: Practise, home: Path, clock: FakeClock) -> None:
    started = practise("start", "tinygpt")
    assert started.code == 0, started.err
    attempt = home / "tiny_gpt_attempt.py"
    assert "stage 1/7 (10m)" in started.out
    lines = attempt.read_text().splitlines()
    assert lines and all(line.startswith("#") or not line for line in lines)  # a comment, no code
    assert "GPTConfig, CausalLMOutput, TinyGPT" in attempt.read_text()

    clock.advance(minutes=4)
    empty = practise("check")
    assert empty.code == 1
    assert "stage 1/7: FAIL" in empty.out
    assert "cannot be graded" in empty.out and "'GPTConfig'" in empty.out

    clock.advance(minutes=8)
    put(KNOWN_BAD / "bad_tinygpt_bool_size_accepted.py", attempt)
    wrong = practise("check", "--note", "took isinstance(x, int) for a size check")
    assert wrong.code == 1
    assert "first failing owner: config_validation" in wrong.out
    assert "repair target: validate every GPTConfig field" in wrong.out
    assert "12m00s of 10m (over budget)" in wrong.out
    assert "first wrong decision recorded: config_validation" in wrong.out

    clock.advance(minutes=30)
    put(FAITHFUL / "good_tinygpt_manual_softmax.py", attempt)
    passed = practise("check", "--all")
    assert passed.code == 0, passed.out
    for stage in range(1, 8):
        assert f"tinygpt stage {stage}/7: PASS" in passed.out
    assert "every stage passed" in passed.out

    assert rows(
        home, "SELECT status, first_wrong_owner, first_wrong_stage, first_wrong_note FROM attempts"
    ) == [("done", "config_validation", 1, "took isinstance(x, int) for a size check")]
    assert rows(home, "SELECT stage, outcome, failed_owner FROM checks ORDER BY id") == [
        (1, "failed", None),
        (1, "failed", "config_validation"),
        *((stage, "passed", None) for stage in range(1, 8)),
    ]
    stage_rows = rows(
        home, "SELECT stage, minutes, passed_at IS NOT NULL FROM stages ORDER BY stage"
    )
    assert stage_rows == [
        (n, m, 1) for n, m in zip(range(1, 8), (10, 45, 20, 30, 45, 30, 15), strict=True)
    ]

    history = practise("history")
    assert history.code == 0
    assert "tinygpt: 1 attempt(s) on 1 day(s)" in history.out
    assert "42m00s!" in history.out  # stage 1 took 42 minutes of 10
    assert "first wrong decisions by owner: config_validation 1" in history.out
    assert (home / "history.png").stat().st_size > 0


def test_prefix_cache_stages_and_a_learned_re_solve(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    """A runtime mechanism: a wrong key, the reference opened, then a clean re-solve a day later."""
    assert practise("start", "prefix_cache").code == 0
    attempt = home / "prefix_cache_attempt.py"
    put(KNOWN_BAD / "bad_prefix_cache_key_without_namespace.py", attempt)
    clock.advance(minutes=10)
    wrong = practise("check")
    assert wrong.code == 1
    assert "first failing owner: prefix_key" in wrong.out

    refused = practise("start", "prefix_cache")
    assert refused.code == 1 and "in progress" in refused.err

    revealed = practise("reveal")
    assert "first wrong decision: prefix_key (stage 1)" in revealed.out
    assert "packages/prefix_cache/src/prefix_cache" in revealed.out

    put(FAITHFUL / "good_prefix_cache_dict_recency.py", attempt)
    clock.advance(minutes=5)
    assert practise("check", "--all").code == 0  # 4 stages, the last in kv_cache's suite
    status = practise("status")
    assert "prefix_cache not learned yet: attempt 1 is the first" in status.out

    clock.advance(days=1)
    again = practise("start", "prefix_cache")
    assert again.code == 0 and "archived prefix_cache_attempt.py" in again.out
    archived = list((home / "archive").glob("prefix_cache_attempt.*.py"))
    assert len(archived) == 1 and "PrefixCachedRunner" in archived[0].read_text()
    header = attempt.read_text()  # the ledger filled this time, then the code below it
    for field in LEDGER:
        header = header.replace(f"# {field}\n# >\n", f"# {field}\n# > stated\n")
    attempt.write_text(header + (FAITHFUL / "good_prefix_cache_dict_recency.py").read_text())
    clock.advance(minutes=12)
    assert practise("check", "--all").code == 0
    status = practise("status")
    line = next(line for line in status.out.splitlines() if line.startswith("prefix_cache"))
    assert "yes (attempt 2, 2026-12-02)" in line
    assert rows(home, "SELECT id, status, reference_opened_at IS NOT NULL FROM attempts") == [
        (1, "done", 1),
        (2, "done", 0),
    ]


def test_seed_style_folder_attempt_imports_its_sibling_by_plain_name(
    practise: Practise, home: Path
) -> None:
    """The `from tiny_gpt import ...` reaches the folder's tiny_gpt_attempt.py."""
    labs = FAITHFUL / "seed_labs"
    assert practise("start", "tinygpt").code == 0
    put(labs / "tiny_gpt.py", home / "tiny_gpt_attempt.py")
    assert practise("start", "cache_aware_lm").code == 0
    put(labs / "cache_aware_lm.py", home / "cache_aware_lm_attempt.py")
    assert "from tiny_gpt import" in (home / "cache_aware_lm_attempt.py").read_text()

    passed = practise("check", "cache_aware_lm", "--all")
    assert passed.code == 0, passed.out
    for stage in range(1, 7):
        assert f"cache_aware_lm stage {stage}/6: PASS" in passed.out
    status = practise("status").out.splitlines()
    assert any(line.startswith("M01 tinygpt") and " 1 active " in line for line in status)


HOSTILE = {
    "hangs": "def append_kv_cache(*args, **kwargs):\n    while True:\n        pass\n",
    "exits": "import os\n\n\ndef append_kv_cache(*args, **kwargs):\n    os._exit(3)\n",
    "allocates": "def append_kv_cache(*args, **kwargs):\n    return bytearray(1 << 40)\n",
}


@pytest.mark.parametrize("behaviour", HOSTILE)
def test_hostile_attempt_fails_routed_and_the_store_stays_whole(
    practise: Practise, home: Path, behaviour: str
) -> None:
    assert practise("start", "kv_cache").code == 0
    attempt = home / "kv_cache_attempt.py"
    attempt.write_text(
        attempt.read_text() + "\n\nclass KVCache:\n    pass\n\n\n" + HOSTILE[behaviour]
    )
    result = practise("check", "--timeout", "3", "--memory-limit", "1024")
    assert result.code == 1, result.out
    assert "first failing owner: fixed_capacity_storage" in result.out
    assert rows(home, "PRAGMA integrity_check") == [("ok",)]
    assert rows(home, "SELECT outcome, failed_owner FROM checks") == [
        ("failed", "fixed_capacity_storage")
    ]
    assert practise("status").code == 0
