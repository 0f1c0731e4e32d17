"""Refusing earns nothing: a candidate that raises for every call earns no contract point
beyond what one that returns zeros earns, in every drill's and package's contract suite.

The raiser is generated from each variable's reference: every graded function keeps its
parameters and raises ValueError naming all of them (so every "names the argument" check
of a rejection test is met), every graded class raises the same from its construction.
The zeros candidate keeps the same signatures and returns zeros shaped like the first
tensor argument (functions only: a class has no cheap "zeros"). Each is graded over its
variable's own contract suite in-process, forked from one warm process
(`suites.ForkedRun`), with the plugin's scoring policy (`scoring.scored`) as grade applies
it. The unit tests at the top prove the policy itself on hand-made results.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from gptlab_testkit.candidates import VARIABLES
from gptlab_testkit.running.results import TestResult
from gptlab_testkit.running.scoring import HELD, advisory_outcome, is_advisory, scored

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

ROOT = Path(__file__).resolve().parents[3]


def _result(
    name: str,
    outcome: str,
    *,
    rejection: bool = False,
    file: str = "test_a.py",
    package: str = "p19",
    kind: str = "contract",
    advisory: str = "",
) -> TestResult:
    return TestResult(
        f"{file}::{name}",
        package,
        "grading",
        kind,  # type: ignore[arg-type]
        (),
        outcome,  # type: ignore[arg-type]
        rejection=rejection,
        advisory=advisory,
    )


def _by_name(results: list[TestResult]) -> dict[str, TestResult]:
    return {r.nodeid.split("::")[1]: r for r in results}


def test_a_rejection_is_held_while_a_valid_input_test_of_its_file_fails() -> None:
    results = [
        _result("valid", "failed"),
        _result("rejects", "passed", rejection=True),
        _result("other_valid", "passed", file="test_b.py"),
        _result("other_rejects", "passed", rejection=True, file="test_b.py"),
    ]
    judged = _by_name(scored(results))
    held = judged["rejects"]
    assert (held.outcome, held.held) == ("failed", True)
    assert held.reason.startswith(HELD) and "1 valid-input test of this file failed" in held.reason
    assert judged["other_rejects"].outcome == "passed"  # its own file's valid tests passed
    assert scored(scored(results)) == scored(results)  # idempotent: grade judges a report again


def test_a_file_of_rejections_alone_is_decided_by_its_package() -> None:
    results = [
        _result("valid", "failed", file="test_a.py"),
        _result("rejects", "passed", rejection=True, file="test_rejections.py"),
        _result("elsewhere", "passed", rejection=True, file="test_c.py", package="p20"),
    ]
    judged = _by_name(scored(results))
    assert judged["rejects"].held and "of p19 failed" in judged["rejects"].reason
    assert judged["elsewhere"].outcome == "passed"  # p20 has no failing valid-input test


def test_a_grader_skip_and_an_extension_decide_nothing() -> None:
    results = [
        _result("valid", "skipped"),
        _result("beyond", "failed", kind="extension"),
        _result("rejects", "passed", rejection=True),
    ]
    assert _by_name(scored(results))["rejects"].outcome == "passed"


def test_an_advisory_result_leaves_the_score_and_decides_no_hold() -> None:
    results = [
        _result("storage", "failed", advisory="identity"),
        _result("rejects", "passed", rejection=True),
        _result("valid", "passed"),
    ]
    judged = _by_name(scored(results))
    assert is_advisory(judged["storage"]) and advisory_outcome(judged["storage"]) == "failed"
    assert judged["rejects"].outcome == "passed"


def test_grade_judges_holds_from_the_listing_and_keeps_advisory_results_apart() -> None:
    from dataclasses import replace

    from gptlab_testkit.running.expected import Expected, skipped_by_run, verdicts

    listed = Expected(
        (
            _result("valid", "passed"),
            _result("rejects", "passed", rejection=True),
            _result("storage", "passed"),
        )
    )
    # The run's own roles are not trusted: it called nothing a rejection; the listing did.
    run = [
        _result("valid", "failed"),
        _result("rejects", "passed"),
        scored([_result("storage", "passed", advisory="identity")])[0],
    ]
    judged = _by_name(verdicts(listed, run))
    assert judged["rejects"].held and judged["rejects"].outcome == "failed"
    assert is_advisory(judged["storage"]) and advisory_outcome(judged["storage"]) == "passed"
    assert skipped_by_run(listed, run) == {}  # an advisory result is no skip of the run's
    unheld = [replace(r, outcome="passed") if r.nodeid.endswith("valid") else r for r in run]
    assert _by_name(verdicts(listed, unheld))["rejects"].outcome == "passed"


HELD_IN_PROCESS = """
import pytest

pytestmark = [pytest.mark.contract, pytest.mark.owner("tying")]

def test_the_work():
    assert False, "wrong values"

@pytest.mark.rejection
def test_a_bad_call_is_refused():
    pass
"""


def test_the_plugin_holds_a_rejection_in_its_own_scorecard_and_report(
    pytester: pytest.Pytester,
) -> None:
    import json

    pytester.makefile(".ini", pytest="[pytest]\ngptlab = true\n")
    pytester.makepyfile(test_held=HELD_IN_PROCESS)
    report = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--gptlab-scorecard",
                                f"--gptlab-report={report}")  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)  # pytest's own outcomes are left alone
    result.stdout.re_match_lines([r"\S+\s+0\s+2\s+0\s+FAIL", r"not earned, held: .*"])
    rows = {row["nodeid"].split("::")[1]: row for row in json.loads(report.read_text())["tests"]}
    held = rows["test_a_bad_call_is_refused"]
    assert (held["outcome"], held["held"], held["rejection"]) == ("failed", True, True)
    assert "routing" in result.stdout.str() and "test_a_bad_call_is_refused" not in "".join(
        line for line in result.stdout.lines if line.strip().startswith("- ")
    )  # a held rejection is no failure to repair


def test_a_pass_rests_on_a_worker_fact_only_where_a_clause_promises_it() -> None:
    from gptlab_testkit.judge import advisory

    advisory.begin_test()
    assert advisory.outcome_rested_on(True, "", ("P19.2",)) == ""  # nothing consulted
    advisory.consulted("forbidding")
    assert advisory.outcome_rested_on(True, "", ("P19.2", "P19.4")) == ""  # values judged
    assert advisory.outcome_rested_on(True, "", ("P19.13", "P19.14")) == "forbidding"
    assert advisory.outcome_rested_on(True, "", ()) == "forbidding"  # a mechanism's suite
    said = f"decode_attention: called cat {advisory.WORKER_REPORTED}"
    assert advisory.outcome_rested_on(False, said, ("P19.2",)) == "forbidding"
    assert advisory.outcome_rested_on(False, "assert 0.5 == 0.25", ("P19.2",)) == ""
    advisory.begin_test()
    assert advisory.facts_consulted() == ()


def test_a_signature_the_source_did_not_settle_decides_whatever_the_clause() -> None:
    from gptlab_testkit.judge import advisory

    advisory.begin_test()
    advisory.consulted("signature")  # the judge asked the worker: the source did not settle it
    assert advisory.outcome_rested_on(True, "", ("P14.1",)) == "signature"
    assert advisory.outcome_rested_on(False, "assert 0.5 == 0.25", ("P14.1",)) == ""
    advisory.begin_test()


def test_the_advisory_clauses_exist_and_the_readme_lists_each() -> None:
    from gptlab_testkit.clauses import readme_clauses
    from gptlab_testkit.judge.advisory import ADVISORY_CLAUSES

    stated = readme_clauses(ROOT / "packages/drills/README.md")
    missing = [clause for clause in ADVISORY_CLAUSES if clause not in stated]
    assert not missing, f"advisory clauses no README states: {missing}"
    testkit_readme = (ROOT / "packages/testkit/README.md").read_text(encoding="utf-8")
    listed = testkit_readme.split("**Advisory clauses**", 1)[1].split("\n\n", 1)[0]
    unlisted = [c for c in ADVISORY_CLAUSES if not re.search(rf"\b{re.escape(c)}(?!\d)", listed)]
    assert not unlisted, f"packages/testkit/README.md does not list {unlisted}"


# -- the raiser and zeros candidates, generated from each reference


def _plain_signature(function: object) -> str:
    """The function's parameters without annotations, every default None."""
    signature = inspect.signature(function)  # type: ignore[arg-type]
    parameters = [
        p.replace(
            annotation=inspect.Parameter.empty,
            default=None if p.default is not inspect.Parameter.empty else p.default,
        )
        for p in signature.parameters.values()
    ]
    return str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))


def _names(function: object) -> str:
    return ", ".join(inspect.signature(function).parameters)  # type: ignore[arg-type]


def candidate_source(variable: str, behaviour: str) -> str:
    """A module defining every graded name of `variable`: raising ("raiser") or returning
    zeros ("zeros", functions; a class still raises)."""
    reference = importlib.import_module(VARIABLES[variable].default_module)
    lines = ['"""Generated: refuses every call."""', "import torch", ""]
    for name in VARIABLES[variable].required_names:
        graded = getattr(reference, name)
        if inspect.isclass(graded):
            init = graded.__init__
            params = _plain_signature(init)
            refusal = f"        raise ValueError('{name}: rejected: {_names(init)}')"
            lines += [f"class {name}:", f"    def __init__{params}:", refusal, ""]
            continue
        params = _plain_signature(graded)
        lines.append(f"def {name}{params}:")
        if behaviour == "zeros":
            lines += ["    for value in list(locals().values()):",
                      "        if isinstance(value, torch.Tensor):",
                      "            return torch.zeros_like(value)",
                      "    return None", ""]  # fmt: skip
        else:
            lines += [f"    raise ValueError('{name}: rejected: {_names(graded)}')", ""]
    return "\n".join(lines)


def has_zeros(variable: str) -> bool:
    reference = importlib.import_module(VARIABLES[variable].default_module)
    return not any(
        inspect.isclass(getattr(reference, n)) for n in VARIABLES[variable].required_names
    )


def test_the_generated_raiser_keeps_the_signatures_and_names_every_parameter() -> None:
    namespace: dict[str, object] = {}
    exec(compile(candidate_source("DRILL_P19_MODULE", "raiser"), "raiser", "exec"), namespace)
    reference = importlib.import_module(VARIABLES["DRILL_P19_MODULE"].default_module)
    generated = namespace["decode_attention"]
    assert list(inspect.signature(generated).parameters) == list(  # type: ignore[arg-type]
        inspect.signature(reference.decode_attention).parameters
    )
    with pytest.raises(ValueError, match="q, k_cache"):
        generated(*[None] * 4)  # type: ignore[operator]


# -- every drill's and package's contract suite, graded with the raiser (and zeros)

GRADE_REFUSERS = """
import json, os, sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from test_testkit_refusing_earns_nothing import candidate_source, has_zeros
from gptlab_testkit.candidates import VARIABLES, select_test_files
from gptlab_testkit.running.scoring import scored
from gptlab_testkit.running.suites import ForkedRun, side_by_side, warm_up

scratch = Path(sys.argv[2])
os.environ.pop("GPTLAB_JUDGE", None)  # in-process: the policy is the same function
warm_up()
args = ["-m", "contract", "-q", "--tb=no", "--no-header", "--gptlab-workers=0",
        "--timeout=30", "--timeout-method=signal", "--gptlab-memory-limit=0"]


def written(variable, behaviour):
    path = scratch / f"{variable.package}_{behaviour}.py"
    path.write_text(candidate_source(variable.name, behaviour), encoding="utf-8")
    return str(path)


drills = [v for v in VARIABLES.values() if v.is_drill]
suites = [str(Path(v.suite).resolve()) for v in drills]
# A drill's suite sees only its own variable: every drill's raiser goes in one run.
plans = [("raiser", suites, {v.name: written(v, "raiser") for v in drills}),
         ("zeros", suites, {v.name: written(v, "zeros") for v in drills if has_zeros(v.name)})]
# A package's suite may hold tests that never load its variable: one run per package, over
# the files grade would select for it (M03's advanced branch shares cache_aware_lm's folder).
plans += [("raiser", select_test_files([str(Path(v.suite).resolve())], {v.name}),
           {v.name: written(v, "raiser")})
          for v in VARIABLES.values() if not v.is_drill]
starts = [lambda plan=plan: ForkedRun(plan[1], plan[2], args, limit=300, clear_variables=True)
          for plan in plans]
graded = {"raiser": {}, "zeros": {}}
for index, run in side_by_side(starts, 2):
    behaviour, _, assignments = plans[index]
    for variable in assignments:
        package = VARIABLES[variable].package
        mine = [r for r in scored(run.results) if r.kind == "contract"
                and (len(assignments) == 1 or r.package == package)]
        graded[behaviour][package] = {
            "returncode": run.returncode,
            "contract": len(mine),
            "rejections": sum(r.rejection for r in mine),
            "held": sum(r.held for r in mine),
            "earned": [[r.nodeid, list(r.clauses)] for r in mine if r.outcome == "passed"],
        }
print(json.dumps(graded))
"""


@pytest.fixture(scope="module")
def refusers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, object]]]:
    """Every suite graded once with the raiser and (drills of functions) with zeros, in a
    fresh interpreter (this pytest process has imported test modules a fork would reuse)."""
    import json
    import subprocess
    import sys

    scratch = tmp_path_factory.mktemp("refusers")
    here = str(Path(__file__).parent)
    command = [sys.executable, "-c", GRADE_REFUSERS, here, str(scratch)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    graded: dict[str, dict[str, dict[str, object]]] = json.loads(done.stdout.splitlines()[-1])
    return graded


def _signature_only(nodeid: str, clauses: list[str]) -> bool:
    """A test that checks only a signature clause: a refuser with the right parameters
    has done that much work (a candidate returning zeros earns it too)."""
    from gptlab_testkit.clauses import clause_kinds

    kinds = clause_kinds(ROOT / nodeid.split("::")[0], clauses)
    return bool(clauses) and len(kinds) == len(clauses) and set(kinds.values()) == {"signature"}


def _advisory_only(clauses: list[str]) -> bool:
    """A test of advisory clauses alone (the worker's word: judged, it earns nothing). Run
    in-process, as here, it may read what the reference left in the process (PT33's and
    PT34's custom ops are registered process-wide by name), which a judged run never sees."""
    from gptlab_testkit.judge.advisory import ADVISORY_CLAUSES

    return bool(clauses) and all(clause in ADVISORY_CLAUSES for clause in clauses)


@pytest.mark.parametrize("package", sorted(v.package for v in VARIABLES.values()))
def test_a_candidate_that_raises_for_every_call_earns_nothing(
    refusers: dict[str, dict[str, dict[str, object]]], package: str
) -> None:
    raiser = refusers["raiser"][package]
    if not raiser["contract"]:  # its suite could not be collected: no verdict, no credit
        assert raiser["returncode"] != 0, f"{package}: nothing graded, yet the run passed"
        return
    earned = raiser["earned"]
    assert isinstance(earned, list)
    beyond_signature = [
        nodeid
        for nodeid, clauses in earned
        if not _signature_only(nodeid, clauses) and not _advisory_only(clauses)
    ]
    assert not beyond_signature, f"{package}: a raiser earns {beyond_signature}"
    zeros = refusers["zeros"].get(package)
    if zeros is not None:
        assert isinstance(zeros["earned"], list)
        assert len(earned) <= len(zeros["earned"]), f"{package}: raiser earns more than zeros"
