"""Made once with the schema-1 store code (gptlab_practice.store before issue 35)."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

from gptlab_practice.store import SCHEMA_VERSION, Store

assert SCHEMA_VERSION == 1
path = Path("tests/data/practice_v1.sqlite3")
path.unlink(missing_ok=True)
t = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
home = Path("/home/learner/practice")
with Store(path) as s:
    a = s.start_attempt("tinygpt", home / "tiny_gpt_attempt.py", t, 10, 7)
    c = s.begin_check(a, 1, t + timedelta(minutes=5))
    s.finish_check(
        c,
        [(1, "failed", 0, 0, None, "missing name 'GPTConfig'")],
        3.1,
        t + timedelta(minutes=5),
        {},
        None,
    )
    c = s.begin_check(a, 1, t + timedelta(minutes=9))
    s.finish_check(
        c,
        [(1, "failed", 40, 1, "config_validation", "AssertionError: bool accepted")],
        3.0,
        t + timedelta(minutes=9),
        {},
        "took isinstance(x, int)",
    )
    budgets = {1: 10, 2: 45, 3: 20, 4: 30, 5: 45, 6: 30, 7: 15}
    c = s.begin_check(a, 1, t + timedelta(minutes=40))
    s.finish_check(
        c,
        [(n, "passed", 40 + n, 0, None, "") for n in range(1, 8)],
        4.2,
        t + timedelta(minutes=40),
        budgets,
        None,
    )
    b = s.start_attempt("kv_cache", home / "kv_cache_attempt.py", t + timedelta(hours=2), 15, 5)
    c = s.begin_check(b, 1, t + timedelta(hours=2, minutes=10))
    s.finish_check(
        c,
        [(1, "passed", 8, 0, None, "")],
        2.0,
        t + timedelta(hours=2, minutes=10),
        {1: 15, 2: 20},
        None,
    )
    s.open_reference(b, t + timedelta(hours=2, minutes=20))
    s.begin_check(b, 2, t + timedelta(hours=2, minutes=25))  # interrupted: stays running
    s2 = s.start_attempt("tinygpt", home / "tiny_gpt_attempt.py", t + timedelta(days=1), 10, 7)
