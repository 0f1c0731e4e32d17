"""The worker's sandbox: as root, the reference, the tests and the testkit cannot be read
from the worker's mount namespace, while torch, the submission and its scratch folder can;
when not root, grade says the reference is not hidden."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gptlab_drills.p19
from gptlab_testkit import grade, judge, sandbox

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

REFERENCE = Path(gptlab_drills.p19.__file__).resolve()
CHECKOUT = Path(__file__).resolve().parents[3]
FAITHFUL = CHECKOUT / "packages/drills/faithful/good_p19_sdpa_inference.py"
NEEDS_A_NAMESPACE = pytest.mark.skipif(
    sandbox.refusal() is not None,
    reason=f"the sandbox is not made here ({sandbox.refusal()}): the not-root notice is tested",
)

# Run in the sandboxed child (python -I -S, site dirs on sys.path): what can it read?
PROBE = """
import ctypes, json, os, sys
sys.path.extend(sys.argv[2:])
def readable(path):
    try:
        with open(path, "rb") as file:
            return len(file.read()) > 0
    except OSError:
        return False
import torch
libc = ctypes.CDLL(None, use_errno=True)
unmounted = libc.umount2(os.path.dirname(sys.argv[1]).encode(), 2) == 0
print(json.dumps({"reference": readable(sys.argv[1]), "torch": torch.__version__,
                  "submission": readable(os.environ["SUBMISSION"]), "unmounted": unmounted,
                  "scratch": os.access(".", os.W_OK), "uid": os.getuid()}))
"""


def _mounts() -> int:
    return len(Path("/proc/self/mountinfo").read_text().splitlines())


def test_the_plan_covers_the_project_and_keeps_what_the_worker_needs(tmp_path: Path) -> None:
    covers = sandbox.plan(FAITHFUL, tmp_path, judge._site_dirs(), judge.REFUSED)
    folders = [Path(p) for p in covers.folders]

    def hidden(path: Path) -> bool:
        return (
            any(path == f or path.is_relative_to(f) for f in folders) or str(path) in covers.files
        )

    for path in (REFERENCE, CHECKOUT / "packages/drills/tests", CHECKOUT / "integration_tests",
                 Path(sandbox.__file__).resolve()):  # fmt: skip
        assert hidden(path), path
    for path in (
        FAITHFUL,
        tmp_path,
        Path(sys.executable).resolve(),
        *map(Path, judge._site_dirs()),
    ):
        assert not hidden(path.resolve()), path
    for site in map(Path, judge._site_dirs()):  # an editable .pth, or the installed package
        for entry in site.glob("*gptlab_drills*"):
            assert hidden(entry.resolve()), entry


def test_not_root_means_not_hidden_and_grade_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(sandbox, "refusal", sandbox.refusal.__wrapped__)  # not the cached answer
    assert sandbox.for_worker(FAITHFUL, tmp_path, judge._site_dirs(), judge.REFUSED) is None

    class StopError(Exception):
        pass

    def stop(*_: object) -> None:
        raise StopError

    monkeypatch.setattr(grade, "selection", stop)  # after the header: no run needed
    with pytest.raises(StopError):
        grade.main([f"DRILL_P19_MODULE={FAITHFUL}"])
    printed = capsys.readouterr().out
    assert "the reference, the tests and the testkit are NOT hidden" in printed
    assert "grade is not root" in printed


@NEEDS_A_NAMESPACE
def test_in_the_sandbox_the_reference_is_gone_and_torch_and_the_submission_stay(
    tmp_path: Path,
) -> None:
    before = _mounts()
    covers = sandbox.plan(FAITHFUL, tmp_path, judge._site_dirs(), judge.REFUSED)
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROBE, str(REFERENCE), *judge._site_dirs()],
        preexec_fn=sandbox.preexec(covers, lambda: None),
        cwd=tmp_path,
        env={"SUBMISSION": str(FAITHFUL)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["reference"] is False and seen["unmounted"] is False
    assert seen["torch"] and seen["submission"] is True and seen["scratch"] is True
    assert REFERENCE.read_bytes()  # still here, outside the worker's namespace
    assert _mounts() == before  # nothing left mounted


@NEEDS_A_NAMESPACE
def test_the_drop_to_nobody_still_works_after_the_capabilities_are_given_up(
    tmp_path: Path,
) -> None:
    covers = sandbox.plan(FAITHFUL, tmp_path, judge._site_dirs(), judge.REFUSED)

    def to_nobody() -> None:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)

    done = subprocess.run(
        ["/bin/sh", "-c", f"id -u; cat {REFERENCE} || echo unreadable"],
        preexec_fn=sandbox.preexec(covers, to_nobody),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.split() == ["65534", "unreadable"]


@NEEDS_A_NAMESPACE
def test_a_judged_worker_cannot_load_the_reference(tmp_path: Path) -> None:
    cheat = tmp_path / "cheat.py"
    cheat.write_text(
        f"try:\n    source = open({str(REFERENCE)!r}).read()\nexcept OSError:\n"
        "    source = ''\nFOUND = 'def decode_attention' in source\n"
    )
    worker = judge.Worker("DRILL_P19_MODULE", cheat, 60, 4096)
    try:
        worker.start()
        found = judge.RemoteModule(worker).FOUND
    finally:
        worker.stop()
    assert found is False


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(),
    reason="needs root and util-linux setpriv to take CAP_SYS_ADMIN away from a grader",
)
def test_root_without_the_namespace_capability_is_not_hidden_and_says_why() -> None:
    done = subprocess.run(
        ["/usr/bin/setpriv", "--bounding-set", "-sys_admin", sys.executable, "-c",
         "from gptlab_testkit import sandbox; print(sandbox.notice())"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "NOT hidden" in done.stdout
    assert "a private mount namespace was refused: Operation not permitted" in done.stdout
