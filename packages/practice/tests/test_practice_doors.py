"""The command line's doors: an unknown item, a missing file, a bad flag or a missing install
is answered at once (before torch is imported), in one line saying what to do; a command
that fails in an empty home leaves no store behind; `status` fits 120 columns; `history`
shows the notes."""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.cli import main
from gptlab_practice.store import STORE_NAME, Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
Practise = Any
FakeClock = Any


def in_fresh_python(home: Path, *argv: str) -> tuple[int, str, bool, float]:
    """(exit status, stderr, torch imported?, seconds) of main(argv) in a new interpreter."""
    code = (
        "import sys, time\n"
        "from gptlab_practice.cli import main\n"
        "started = time.perf_counter()\n"
        f"status = main(['--home', {str(home)!r}, '--root', {str(ROOT)!r}, *{list(argv)!r}])\n"
        "print('torch' in sys.modules, time.perf_counter() - started)\n"
        "raise SystemExit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    imported, seconds = done.stdout.split()[-2:]
    return done.returncode, done.stderr, imported == "True", float(seconds)


@pytest.mark.parametrize("typed", ["P99", "kvcache", "kv-cache"])
def test_an_unknown_item_is_answered_before_torch_with_a_suggestion(
    typed: str, tmp_path: Path
) -> None:
    home = tmp_path / "practice"
    status, err, torch_imported, seconds = in_fresh_python(home, "start", typed)
    print(f"start {typed}: {seconds:.2f} s to the answer (in the command)")
    assert status == 2 and f"unknown item {typed!r}" in err and "did you mean" in err
    assert ("kv_cache" in err) if "kv" in typed else ("P19" in err)
    assert not torch_imported and not home.exists()


def test_a_deleted_attempt_file_is_answered_before_torch_and_names_start_new(
    practise: Practise, home: Path
) -> None:
    assert practise("start", "P19").code == 0
    (home / "p19_attempt.py").unlink()
    before = dump(home / STORE_NAME)
    status, err, torch_imported, seconds = in_fresh_python(home, "check")
    print(f"check with the attempt file deleted: {seconds:.2f} s")
    assert status == 1 and "missing" in err and "`start P19 --new`" in err
    assert not torch_imported
    assert dump(home / STORE_NAME) == before  # no check row


def test_a_suite_that_is_not_installed_names_the_install(
    practise: Practise, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert practise("start", "kv_cache").code == 0
    before = dump(home / STORE_NAME)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "kv_cache" else real(name, *rest),
    )
    run = practise("check")
    assert run.code == 1 and 'pip install "packages/kv_cache[test]"' in run.err
    assert dump(home / STORE_NAME) == before


def test_a_missing_project_module_hint_names_the_install() -> None:
    from gptlab_practice.messages import hint

    reason = (
        "missing module 'cache_aware_lm': no cache_aware_lm.py beside the attempt and "
        "nothing installed by that name"
    )
    assert 'pip install "packages/cache_aware_lm[test]"' in hint(ROOT, reason, str)
    elsewhere = "missing module 'numpyy': no numpyy.py beside the attempt"
    assert hint(ROOT, elsewhere, lambda r: "put it beside") == "put it beside"


@pytest.mark.parametrize(
    "argv",
    [
        ("check",),  # nothing started
        ("repair",),
        ("reveal",),
        ("history",),
        ("check", "--timeout", "nan"),
        ("check", "--timeout", "inf"),
        ("check", "--timeout=-inf"),
        ("start", "nonesuch"),
    ],
)
def test_a_failed_command_in_an_empty_home_creates_nothing(
    argv: tuple[str, ...], practise: Practise, home: Path
) -> None:
    run = practise(*argv)
    assert run.code in (1, 2) and len(run.err.strip().splitlines()) == 1
    assert not home.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0"])
def test_timeout_must_be_finite_and_positive(value: str, practise: Practise) -> None:
    run = practise("check", f"--timeout={value}")
    assert run.code == 2 and "--timeout must be a finite number > 0" in run.err


@pytest.mark.parametrize("option", ["--home", "--root"])
def test_an_empty_folder_option_is_refused(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main([option, "", "status"])
    assert stopped.value.code == 2 and "empty path" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_note_that_is_not_utf8_is_refused_before_the_check_row(
    practise: Practise, home: Path
) -> None:
    assert practise("start", "P19").code == 0
    before = dump(home / STORE_NAME)
    run = practise("check", "--note", "decided \udcff")  # an argv byte that is not UTF-8
    assert run.code == 2 and "--note is not UTF-8" in run.err
    assert dump(home / STORE_NAME) == before


def test_status_fits_120_columns_with_the_longest_cells(
    home: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store(home / STORE_NAME) as store:
        now = clock()
        for item, owner in (
            ("modern_lm:layer_reconstruction", "modern_attention"),
            ("speculative", "speculative_accounting"),
            ("PT17", "pt17"),
        ):
            attempt = store.start_attempt(item, home / "x.py", now, 45, 1 if ":" in item else 2)
            check = store.begin_check(attempt, 1, now)
            store.finish_check(check, [(1, "failed", 3, 4, owner, "why")], 1.0, now, {2: 20}, None)
    assert main(["--home", str(home), "status"], clock=clock) == 0
    lines = capsys.readouterr().out.splitlines()
    print("\n".join(lines))
    assert max(len(line) for line in lines) <= 120
    assert any(line.startswith("modern_lm:layer_reconstruction") for line in lines)


def test_history_shows_the_note(practise: Practise, home: Path, clock: FakeClock) -> None:
    with Store(home / STORE_NAME) as store:
        now = clock()
        attempt = store.start_attempt("P19", home / "p19_attempt.py", now, 45, 1)
        check = store.begin_check(attempt, 1, now)
        note = "took lengths as the last index, not the count"
        store.finish_check(check, [(1, "failed", 3, 4, "p19", "why")], 1.0, now, {}, note)
    out = practise("history", "P19").out
    assert f"attempt 1 note, 2026-12-01 09:00: {note}" in out


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: db.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
