"""The plugin acts only where asked: another project's suite in the same environment runs as
if gptlab-testkit were not installed; this project's suites, a conftest or a flag opt in."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

# Someone else's suite: no owner, a marker gptlab also registers, a hypothesis test.
UNRELATED = """
import sys

import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.errors import InvalidArgument


def test_x():
    assert 1 + 1 == 2


@pytest.mark.contract
def test_their_own_contract_marker():
    pass


@given(st.integers())
def test_hypothesis_keeps_its_own_profile(n):
    # hypothesis picks its own profile ("ci" under a CI variable, else "default");
    # gptlab's derandomized one is never registered, let alone loaded.
    with pytest.raises(InvalidArgument):
        settings.get_profile("gptlab")


def test_nothing_changed(request):
    option = request.config.option
    assert option.timeout is None  # no grading time limit
    assert option.gptlab_workers is None and option.gptlab_memory_limit is None
    assert "torch" not in sys.modules
"""


def test_an_unrelated_suite_runs_untouched(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KV_CACHE_MODULE", "their_kv_cache")  # a name that is theirs too
    pytester.makepyfile(test_theirs=UNRELATED)
    pytester.makefile(".ini", pytest="[pytest]\nmarkers =\n    contract: theirs\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=4)
    output = result.stdout.str() + result.stderr.str()
    assert "gptlab" not in output.replace("gptlab-testkit", ""), output  # plugin list only


def test_an_unrelated_suite_keeps_pytests_strict_markers(pytester: pytest.Pytester) -> None:
    """gptlab's markers are not registered there: `contract` is unknown, as without it."""
    pytester.makepyfile(test_theirs=UNRELATED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error
    assert "'contract' not found in `markers`" in result.stdout.str()


UNROUTED = "def test_x():\n    assert 1 + 1 == 2\n"


@pytest.mark.parametrize(
    ("how", "args"),
    [
        ("ini", ()),
        ("conftest", ()),
        ("flag", ("--gptlab",)),
        ("option", ("--gptlab-scorecard",)),
    ],
)
def test_a_suite_that_asks_gets_owners_enforced(
    pytester: pytest.Pytester, how: str, args: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_x=UNROUTED)
    if how == "ini":
        pytester.makefile(".ini", pytest="[pytest]\ngptlab = true\n")
    if how == "conftest":
        pytester.makeconftest("gptlab = True  # this suite is graded by gptlab's plugin\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert "unrouted tests" in result.stderr.str()
