"""The pytest plugin: markers enforced, failures routed, scorecards, one-line candidate errors."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


@pytest.fixture(autouse=True)
def _a_gptlab_suite(pytester: pytest.Pytester) -> None:
    """Each suite here stands for one of this project's: it asks for the plugin as the
    repository's pyproject.toml does (elsewhere the plugin stays out: test_testkit_opt_in)."""
    pytester.makefile(".ini", pytest="[pytest]\ngptlab = true\n")


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


STOPPABLE = """
import pytest

pytestmark = pytest.mark.contract

@pytest.mark.owner("tying")
def test_a_tying_failure():
    assert False

@pytest.mark.owner("loss_shift")
def test_a_loss_failure():
    assert False

@pytest.mark.owner("tying")
def test_a_tying_pass():
    pass

@pytest.mark.owner("loss_shift")
def test_another_loss_failure():
    assert False

@pytest.mark.owner("registration")
def test_a_registration_pass():
    pass
"""


def _outcomes(pytester: pytest.Pytester, *args: str) -> tuple[int, dict[str, tuple[str, str]]]:
    from gptlab_testkit.running.results import read_report

    report = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--gptlab-report", str(report), *args)
    tests = read_report(report)[1]
    return int(result.ret), {r.nodeid.split("::")[-1]: (r.outcome, r.reason) for r in tests}


def test_tests_a_stopped_run_never_reached_are_reported_not_run(pytester: pytest.Pytester) -> None:
    from gptlab_testkit.running.results import NOT_RUN

    pytester.makepyfile(test_stop=STOPPABLE)
    code, outcomes = _outcomes(pytester, "-x")
    assert code == 1
    assert outcomes["test_a_tying_failure"][0] == "failed"
    for name in ("test_a_loss_failure", "test_a_tying_pass", "test_a_registration_pass"):
        assert outcomes[name] == ("skipped", NOT_RUN), name


@pytest.mark.parametrize("workers", ["0", "1"])
def test_stop_once_caught_runs_the_owners_tests_first_and_stops_when_caught(
    pytester: pytest.Pytester, workers: str
) -> None:
    from gptlab_testkit.running.results import NOT_RUN

    pytester.makepyfile(test_stop=STOPPABLE)
    code, outcomes = _outcomes(
        pytester, "--gptlab-stop-once-caught=loss_shift:3", f"--gptlab-workers={workers}"
    )
    assert code == 1  # failed, not interrupted: a caught candidate's run
    failed = {name for name, (outcome, _) in outcomes.items() if outcome == "failed"}
    # loss_shift's two tests ran first, then the first other test: three failures.
    assert failed == {"test_a_loss_failure", "test_another_loss_failure", "test_a_tying_failure"}
    not_run = {name for name, (_, reason) in outcomes.items() if reason == NOT_RUN}
    assert not_run == {"test_a_tying_pass", "test_a_registration_pass"}


def test_stop_once_caught_runs_everything_while_the_owner_has_no_failure(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_stop=STOPPABLE)
    code, outcomes = _outcomes(pytester, "--gptlab-stop-once-caught=registration:1")
    assert code == 1
    assert [name for name, (outcome, _) in outcomes.items() if outcome == "failed"] == [
        "test_a_tying_failure", "test_a_loss_failure", "test_another_loss_failure"
    ]  # fmt: skip
    assert all(outcome != "skipped" for outcome, _ in outcomes.values())


@pytest.mark.parametrize("value", ["no_such_owner:3", "loss_shift:0", "loss_shift:x", "3"])
def test_stop_once_caught_refuses_a_malformed_rule(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(test_stop=STOPPABLE)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--gptlab-stop-once-caught={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--gptlab-stop-once-caught" in result.stderr.str()
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()
