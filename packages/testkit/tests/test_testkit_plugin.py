"""The pytest plugin: markers enforced, failures routed, scorecards, one-line candidate errors."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

ROUTED = """
import pytest

@pytest.mark.contract
@pytest.mark.tier1
@pytest.mark.owner("loss_shift")
def test_loss():
    assert {loss_ok}

@pytest.mark.contract
@pytest.mark.tier0
@pytest.mark.owner("tying")
def test_tying():
    assert True
"""


def test_passing_run_prints_no_routing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ok=ROUTED.format(loss_ok=True))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "failure routing" not in result.stdout.str()


def test_failing_run_ends_with_owner_and_repair_target(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad=ROUTED.format(loss_ok=False))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*gptlab failure routing*",
            "loss_shift  [[]tinygpt[]] shifted cross-entropy loss  (1 failed)",
            "    repair: shift logits left and labels right*",
            "    - test_bad.py::test_loss: *assert False*",
        ]
    )
    assert "tying  [" not in result.stdout.str()


def test_scorecard_counts_per_package_and_tier(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_card=ROUTED.format(loss_ok=False))
    result = pytester.runpytest("-p", "no:cacheprovider", "--gptlab-scorecard")
    output = result.stdout.str()
    assert "gptlab graded modules:" in output
    result.stdout.re_match_lines([r"\s+tier0\s+1\s+0\s+0\s+pass", r"\s+tier1\s+0\s+1\s+0\s+FAIL"])


@pytest.mark.parametrize(
    "decorators",
    [
        "@pytest.mark.contract",
        '@pytest.mark.owner("tying")',
        '@pytest.mark.contract\n@pytest.mark.owner("nobody")',
    ],
)
def test_unrouted_test_is_refused(pytester: pytest.Pytester, decorators: str) -> None:
    pytester.makepyfile(test_unrouted=f"import pytest\n\n{decorators}\ndef test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrouted tests" in result.stderr.str()


def test_broken_candidate_ends_the_session_with_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempt = pytester.makepyfile(attempt="GPTConfig = 1\n")
    pytester.makepyfile(
        test_uses_candidate="""
from gptlab_testkit import candidate
tg = candidate("TINY_GPT_MODULE")

def test_never_runs():
    pass
"""
    )
    monkeypatch.setenv("TINY_GPT_MODULE", str(attempt))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 4
    output = result.stdout.str() + result.stderr.str()
    assert "does not define 'CausalLMOutput', 'TinyGPT'" in output
    assert "Traceback" not in output and "candidates.py" not in output
