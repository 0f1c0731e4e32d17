"""`cannot_grade`: an import failure worded by its cause, and only the hint for that cause."""

from __future__ import annotations

import pytest

from gptlab_testkit.loading.cannot_grade import hint_for, import_cause

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def _raised(source: str) -> BaseException:
    try:
        exec(compile(source, "/somewhere/attempt.py", "exec"), {})
    except BaseException as error:  # the error is the subject here
        return error
    raise AssertionError("the source ran")


def test_a_syntax_error_names_its_file_and_line() -> None:
    cause = import_cause(_raised("x = 1\ny = (\n"), "")
    assert "attempt.py line 2" in cause
    assert "fix that line" in hint_for(cause)


def test_a_missing_module_is_named_with_where_it_was_imported() -> None:
    cause = import_cause(_raised("import gptlab_no_such_module_here\n"), " (attempt.py:1)")
    assert "'gptlab_no_such_module_here'" in cause and "(attempt.py:1)" in cause
    assert "beside the attempt" in hint_for(cause)


def test_an_error_of_the_modules_own_code_keeps_its_type_and_text() -> None:
    cause = import_cause(_raised("raise RuntimeError('boom at import')\n"), " (attempt.py:1)")
    assert cause.startswith("RuntimeError: boom at import")
    assert "python FILE" in hint_for(cause)


@pytest.mark.parametrize(
    ("reason", "advice"),
    [
        ("KV=a.py: module 'a.py' does not define 'KVCache'", "a stub until its stage"),
        ("importing the attempt a.py did not finish within 90 s", "must not wait or loop"),
    ],
)
def test_each_cause_gets_its_own_hint(reason: str, advice: str) -> None:
    assert advice in hint_for(reason)
    assert advice not in hint_for("ValueError: something else")
