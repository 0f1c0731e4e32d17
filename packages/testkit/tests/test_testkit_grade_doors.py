"""grade's doors: a mistake is answered at once, in one line, with a suggestion; the checkout
is found from anywhere; NaN, infinities and empty values are refused; failures print briefly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gptlab_testkit.commands.grade import UsageError
from gptlab_testkit.commands.grading import parse_options, selection
from gptlab_testkit.loading import checkout
from gptlab_testkit.running.brief import without_tensor_reprs

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

REPO = Path(__file__).resolve().parents[3]

# Each argument list is wrong in one respect; (the words the one-line answer must hold).
MISTAKES = {
    "drill id": (["p99", "a.py"], "unknown package 'p99' (did you mean p19 or p09?)"),
    "package": (["kvcache", "a.py"], "did you mean kv_cache"),
    "dashed package": (["kv-cache=a.py"], "did you mean kv_cache"),
    "file": (["kv_cache", "{tmp}/kv_cach.py"], "{tmp}/kv_cach.py (did you mean kv_cache.py?)"),
    "folder": (["{tmp}/no_labs/"], "no such file or folder"),
    "module": (["kv_cache=no_such_module_here"], "no module 'no_such_module_here'"),
    "empty value": (["p19="], "p19=: no candidate given"),
    "empty pair": (["kv_cache", ""], "kv_cache=: no candidate given"),
    "flag": (["--timout", "5"], "unknown option --timout (did you mean --timeout?)"),
    "nan timeout": (["--timeout", "nan"], "--timeout: must be a finite number, got 'nan'"),
    "inf timeout": (["--timeout=inf"], "--timeout: must be a finite number, got 'inf'"),
    "-inf points": (["--gradescope-points=-inf"], "must be a finite number, got '-inf'"),
    "nan workers": (["--workers", "nan"], "--workers: invalid int value: 'nan'"),
    "nan memory": (["--memory-limit", "nan"], "--memory-limit: invalid int value: 'nan'"),
}  # fmt: skip

# Runs grade's main on each argument list in a fresh interpreter: exit status, stderr, and
# whether torch had been imported by the time the answer came.
PROBE = """
import contextlib, io, json, sys
from gptlab_testkit.commands.grade import main
answers = {}
for name, argv in json.loads(sys.argv[1]).items():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    answers[name] = [code, err.getvalue(), "torch" in sys.modules]
print(json.dumps(answers))
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, bool]]:
    tmp = tmp_path_factory.mktemp("doors")
    (tmp / "kv_cache.py").write_text("")
    cases = {name: [a.format(tmp=tmp) for a in argv] for name, (argv, _) in MISTAKES.items()}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(cases)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(run.stdout)
    return {name: (found[name][0], found[name][1], found[name][2]) for name in MISTAKES}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_mistake_is_one_line_with_what_to_do_before_torch_is_imported(
    answers: dict[str, tuple[int, str, bool]], case: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    code, stderr, torch_imported = answers[case]
    tmp = next(p for p in tmp_path_factory.getbasetemp().iterdir() if p.name.startswith("doors"))
    assert code == 2, (case, stderr)
    assert stderr.count("\n") == 1 and stderr.startswith("grade: "), stderr
    assert MISTAKES[case][1].format(tmp=tmp) in stderr, stderr
    assert " !" not in stderr
    assert not torch_imported, "the answer must not wait for torch"


def test_grade_finds_the_checkout_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(checkout.ROOT_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    options = parse_options([])
    assert options.root == REPO  # this package is installed from it (editable)
    paths, _ = selection(options.root, {})
    assert str(REPO / "packages" / "kv_cache" / "tests") in paths


def test_root_and_its_variable_choose_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_options(["--root", str(REPO)]).root == REPO
    monkeypatch.setenv(checkout.ROOT_VARIABLE, str(tmp_path))
    with pytest.raises(UsageError, match="is not a gptlab checkout"):
        parse_options([])


def test_without_a_checkout_grade_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(checkout.ROOT_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(checkout, "__file__", str(tmp_path / "site-packages" / "checkout.py"))
    with pytest.raises(UsageError, match=r"no gptlab checkout above .* pass --root PATH"):
        parse_options(["p19", "a.py"])


def test_long_and_multi_line_tensor_reprs_are_dropped_short_ones_kept() -> None:
    escaped = "where False = equal(tensor([[0, 1],\\n        [2, 3]]), tensor([1, 2]))"
    assert without_tensor_reprs(escaped) == "where False = equal(tensor(...), tensor([1, 2]))"
    long = "got " + repr(list(range(40))).replace("[", "tensor([", 1) + ") expected tensor(3)"
    assert without_tensor_reprs(long) == "got tensor(...) expected tensor(3)"


FAILING = """
import pytest, torch

@pytest.mark.contract
@pytest.mark.owner("greedy_decoding")
def test_equal():
    a = torch.arange(40).reshape(4, 10)
    assert torch.equal(a, a + 1), f"generated {a}"
"""


def test_line_style_failures_print_no_whole_tensor(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_tensor=FAILING)
    result = pytester.runpytest("-p", "no:cacheprovider", "--gptlab", "--tb=line", "-q")
    result.assert_outcomes(failed=1)
    failures = result.stdout.str().split("FAILURES")[1]
    assert "generated tensor(...)" in failures and "(tensor(...), (tensor(...) + 1))" in failures
    assert "\\n" not in failures and "[10, 11" not in failures


def test_a_candidate_error_is_one_plain_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempt = pytester.makepyfile(attempt="def decode_attention(:\n")
    pytester.makepyfile(
        test_uses="from gptlab_testkit import candidate\n"
        "tg = candidate('TINY_GPT_MODULE')\n\ndef test_never_runs():\n    pass\n"
    )
    monkeypatch.setenv("TINY_GPT_MODULE", str(attempt))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--gptlab")
    assert result.ret == 4
    lines = (result.stdout.str() + result.stderr.str()).splitlines()
    errors = [line for line in lines if "candidate error" in line]
    assert len(errors) == 1 and errors[0].startswith("candidate error: TINY_GPT_MODULE="), lines
    assert not any(line.rstrip().endswith(" !") or line.startswith("!") for line in lines)


@pytest.mark.parametrize(
    "option", ["--submission-timeout=nan", "--submission-timeout=inf", "--timeout=nan"]
)
def test_a_class_refuses_a_limit_that_is_not_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    from gptlab_testkit.commands.classroom import main as grade_class

    out = tmp_path / "out"
    assert grade_class(["--submissions", str(tmp_path), "--out", str(out), option], []) == 2
    assert "must be a finite number" in capsys.readouterr().err
    assert not out.exists()  # nothing graded, nothing written
