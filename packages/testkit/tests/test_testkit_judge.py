"""The judge's machinery: values on the wire, expected tests, owned process trees, the
checkout guard, and a candidate that runs in a worker instead of the test process."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import torch

from gptlab_testkit import wire
from gptlab_testkit.checkout_guard import CheckoutGuard
from gptlab_testkit.expected import NOT_REPORTED, Expected, verdicts
from gptlab_testkit.judge import Worker
from gptlab_testkit.results import TestResult
from gptlab_testkit.suites import ForkedRun

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def round_trip(value: object) -> object:
    read, write = os.pipe()
    blobs: list[bytes] = []
    wire.send(write, {"v": wire.encode(value, blobs)}, blobs)
    message, got = wire.receive(read, time.monotonic() + 5)
    os.close(read)
    os.close(write)
    return wire.decode(message["v"], got)


def test_values_cross_the_wire_by_value() -> None:
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)[:, 1:]  # not contiguous
    got = round_trip({"x": x, "shape": (2, 3), "dtype": torch.bfloat16, "none": None})
    assert isinstance(got, dict)
    assert torch.equal(got["x"], x) and got["shape"] == (2, 3)
    assert got["dtype"] is torch.bfloat16 and got["none"] is None


def test_a_tensor_whose_bytes_do_not_match_its_shape_is_refused_before_allocation() -> None:
    spec = {"t": [0, "float32", [1000, 1000], "cpu"]}
    with pytest.raises(wire.WireError, match="does not match"):
        wire.decode(spec, [b"\0" * 16])
    with pytest.raises(wire.WireError, match="not allowed"):
        wire.decode({"t": [0, "object", [1], "cpu"]}, [b"\0" * 8])


def record(nodeid: str, outcome: str = "passed", reason: str = "") -> TestResult:
    return TestResult(nodeid, "p19", "p19", "contract", (), outcome, 0.0, reason)  # type: ignore[arg-type]


def test_a_skipped_or_missing_test_counts_as_failed_and_a_declared_skip_does_not() -> None:
    expected = Expected(
        (record("a"), record("b"), record("c"), record("gpu", "skipped", "needs a GPU"))
    )
    reported = [record("a"), record("b", "skipped", "not today"), record("extra")]

    judged = {r.nodeid: r for r in verdicts(expected, reported)}

    assert set(judged) == {"a", "b", "c", "gpu"}  # what the run added is ignored
    assert judged["a"].outcome == "passed"
    assert (
        judged["b"].outcome == "failed" and "skipped in the candidate's run" in judged["b"].reason
    )
    assert (judged["c"].outcome, judged["c"].reason) == ("failed", NOT_REPORTED)
    assert (judged["gpu"].outcome, judged["gpu"].reason) == ("skipped", "needs a GPU")


def test_a_skip_the_reference_makes_too_is_the_environments_not_a_failure() -> None:
    expected = Expected((record("device"), record("b")))
    reported = [record("device", "skipped", "no second device"), record("b", "skipped", "hm")]

    judged = {
        r.nodeid: r
        for r in verdicts(expected, reported, reference_skips={"device": "no second device"})
    }

    assert judged["device"].outcome == "skipped" and "as the reference" in judged["device"].reason
    assert judged["b"].outcome == "failed"  # the reference ran it: the candidate's skip fails


DETACHED = """
import os, time
from pathlib import Path
import pytest

@pytest.mark.extension
@pytest.mark.owner("grading")
def test_leaves_a_daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            Path({pid_file!r}).write_text(str(os.getpid()))
            time.sleep(120)
        os._exit(0)
    time.sleep(0.5)
"""


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def test_a_double_forked_setsid_process_does_not_outlive_its_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "daemon.pid"
    suite = tmp_path / "test_detached.py"
    suite.write_text(DETACHED.format(pid_file=str(pid_file)))

    ForkedRun([str(suite)], {}, ["--timeout=0"]).wait()

    daemon = int(pid_file.read_text())
    assert not _alive(daemon)


def test_the_checkout_guard_puts_back_what_a_submission_changed(tmp_path: Path) -> None:
    tests = tmp_path / "packages" / "x" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_x.py").write_text("def test_x(): assert False\n")
    guard = CheckoutGuard(tmp_path)
    (tests / "test_x.py").write_text("def test_x(): pass\n")
    (tests / "conftest.py").write_text("# a force-pass hook\n")

    changed = guard.restore()

    assert changed == ["packages/x/tests/conftest.py", "packages/x/tests/test_x.py"]
    assert (tests / "test_x.py").read_text() == "def test_x(): assert False\n"
    assert not (tests / "conftest.py").exists() and guard.restore() == []


CANDIDATE = """
import torch

def double(x):
    return x * 2

def scale_in_place(x, factor):
    x.mul_(factor)

def reach():
    import gptlab_testkit
"""


@pytest.fixture
def worker(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "attempt.py"
    path.write_text(CANDIDATE)
    worker = Worker("DRILL_P19_MODULE", path, timeout_s=60, memory_mib=0)
    worker.start()
    yield worker
    worker.stop()


def call(worker: Worker, name: str, *args: object) -> object:
    from gptlab_testkit.judge import _call

    return _call(worker, None, name, args, {})


def test_a_candidate_runs_in_the_worker_and_answers_with_values(worker: Worker) -> None:
    x = torch.arange(4.0)
    got = call(worker, "double", x)
    assert isinstance(got, torch.Tensor) and torch.equal(got, x * 2)
    assert worker.process is not None and worker.process.pid != os.getpid()


def test_an_in_place_write_in_the_worker_is_seen_in_the_judges_tensor(worker: Worker) -> None:
    x = torch.ones(3)
    call(worker, "scale_in_place", x, 3.0)
    assert torch.equal(x, torch.full((3,), 3.0))


def test_reaching_for_the_testkit_is_a_failure_naming_it(worker: Worker) -> None:
    with pytest.raises(AssertionError, match="reached for gptlab_testkit"):
        call(worker, "reach")


def test_cheats_declare_what_they_try(tmp_path: Path) -> None:
    from gptlab_testkit.cheats import read_cheat

    folder = Path(__file__).parents[3] / "integration_tests" / "cheats"
    cheats = [read_cheat(path) for path in sorted(folder.glob("cheat_*.py"))]
    assert len(cheats) >= 15
    assert all(c.says and c.cheat for c in cheats)
    assert all(c.why for c in cheats if not c.enforced)
    json.dumps([c.cheat for c in cheats])  # plain strings


def test_a_batched_cheat_is_a_submission_named_as_its_variable_expects(tmp_path: Path) -> None:
    from gptlab_testkit.cheats import GRADESCOPE, _submission, read_cheat

    folder = Path(__file__).parents[3] / "integration_tests" / "cheats"
    cheat = read_cheat(folder / "cheat_p19_frame_oracle.py")
    _submission(cheat.path, cheat.variable, tmp_path / "one")
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["p19.py"]
    assert all((folder / name).exists() for name in GRADESCOPE)  # the singly graded ones
