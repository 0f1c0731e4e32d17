"""The worker's sandbox, seen from inside a real worker: a probe candidate reports its
uid, gid and capabilities, every path it can see, what it can write and whom it can
signal. Two workers side by side (what `grade --submissions --jobs 2` starts: one
grading run per submission, each starting its workers the same way) see nothing of each
other. Without a sandbox, grade refuses to judge."""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gptlab_drills.p19
from gptlab_testkit.commands import grade
from gptlab_testkit.judge import client, policy, sandbox

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

REFERENCE = Path(gptlab_drills.p19.__file__).resolve()
CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
CHECKOUT = Path(__file__).resolve().parents[3]
NEEDS_THE_SANDBOX = pytest.mark.skipif(
    sandbox.refusal() is not None, reason=f"no sandbox here: {sandbox.refusal()}"
)

# The probe candidate: what its worker sees and may do, reported from inside.
PROBE = """
import errno, json, os, signal, socket

ALLOWED = {allowed!r}  # what the judge bound; every visible path must lie on the way to one
FORBIDDEN = {forbidden!r}  # paths of the judge's world that must not exist here
PIDS = {pids!r}  # the judge's process and its parents: none may be signalled
WRITES = {writes!r}  # folders a write into would outlive the worker
PORT = {port!r}  # a listener of the judge on loopback


def _allowed(path):
    return any(path == a or path.startswith(a.rstrip("/") + "/") or a.startswith(path + "/")
               for a in ALLOWED)


def _visible():
    extra = []
    for folder, subfolders, files in os.walk("/"):
        subfolders[:] = [s for s in subfolders if os.path.join(folder, s) not in ("/proc", "/dev")]
        for name in [*subfolders, *files]:
            path = os.path.join(folder, name)
            if not _allowed(path):
                extra.append(path)
    return extra[:50]


def _signal(pid):
    try:
        os.kill(pid, 0)
        return "reached"
    except OSError as error:
        return errno.errorcode[error.errno]


def _write(folder):
    try:
        with open(os.path.join(folder, "planted-by-the-probe.txt"), "w") as file:
            file.write("planted")
        return "written"
    except OSError as error:
        return errno.errorcode[error.errno]


def _connect():
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=2):
            return "connected"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))


def report():
    status = open("/proc/self/status").read().splitlines()
    caps = {{l.split(":")[0]: int(l.split()[1], 16) for l in status if l.startswith("Cap")}}
    return json.dumps({{
        "uid": os.getresuid(), "gid": os.getresgid(), "groups": os.getgroups(), "caps": caps,
        "pid": os.getpid(), "ppid": os.getppid(), "extra": _visible(),
        "existing": [p for p in FORBIDDEN if os.path.lexists(p)],
        "signals": {{str(p): _signal(p) for p in PIDS}}, "init": _signal(1),
        "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "writes": {{f: _write(f) for f in WRITES}}, "tmp": sorted(os.listdir("/tmp")),
        "network": _connect(), "cwd": os.getcwd(),
    }})
"""


def _ancestors() -> list[int]:
    found, pid = [], os.getpid()
    while pid > 1:
        found.append(pid)
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(4)
    yield server
    server.close()


def _probe(
    folder: Path,
    variable: str,
    port: int,
    forbidden: list[str],
    writes: list[str],
    pids: tuple[int, ...] = (),
) -> tuple[dict[str, Any], client.Worker]:
    """Start a real worker for a probe candidate and read its report (the worker is
    returned running: the caller stops it)."""
    folder.mkdir(exist_ok=True)
    candidate = folder / "probe.py"
    candidate.write_text("")
    worker = client.Worker(variable, candidate, 120, 4096)
    worker.spawn()
    assert worker.scratch is not None
    system, links, emptied = sandbox._system()
    allowed = [*system, *links, *emptied, *policy.seen_roots(variable), str(worker.scratch)]
    source = PROBE.format(
        allowed=allowed, forbidden=forbidden, pids=[*_ancestors(), *pids], writes=writes, port=port
    )
    candidate.write_text(source)
    worker.load()
    return json.loads(client.RemoteModule(worker).report()), worker


def _outer_uid(worker: client.Worker, inner: int) -> int:
    assert worker.process is not None
    pid = sandbox.outer_pid(worker.process.pid, inner)
    assert pid is not None, "the worker's process was not found from outside"
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x[:4] == "Uid:")
    return int(line.split()[1])


def _nox_beside(roots: list[str]) -> list[str]:
    """The checkout's `.nox`, or where torch is installed under it (nox's shared
    `.nox/_torch`, bound as an import root) every other entry of it (the venvs)."""
    nox = CHECKOUT / ".nox"
    inside = [Path(root) for root in roots if Path(root).is_relative_to(nox)]
    if not inside:
        return [str(nox)]
    kept = {nox / root.relative_to(nox).parts[0] for root in inside}
    return [str(entry) for entry in sorted(nox.iterdir()) if entry not in kept]


@NEEDS_THE_SANDBOX
def test_a_worker_is_nobody_without_capabilities_and_sees_only_what_it_needs(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(policy.TRUSTED_VARIABLE, raising=False)
    grade_folder = Path(tempfile.mkdtemp(prefix="gptlab-run-"))  # as grade's run folder
    (grade_folder / "report.json").write_text("{}")
    copy = tmp_path / "copy" / "gptlab_drills"  # another copy of the project on the disk
    copy.mkdir(parents=True)
    (copy / "p19.py").write_bytes(REFERENCE.read_bytes())
    roots = policy.site_dirs("DRILL_P19_MODULE")
    forbidden = [
        str(CHECKOUT / "README.md"), str(CHECKOUT / "packages"), str(CHECKOUT / ".git"),
        *_nox_beside(roots), str(REFERENCE), str(grade_folder), str(copy),
        str(Path(sandbox.__file__).resolve()), str(Path.home() / ".cache"), str(tmp_path),
    ]  # fmt: skip
    writes = [*roots, str(Path(roots[0]).parent), "/tmp/..", "/"]
    try:
        seen, worker = _probe(tmp_path / "probe", "DRILL_P19_MODULE", 0, forbidden, writes)
        try:
            assert seen["uid"] == [65534] * 3 and seen["gid"] == [65534] * 3
            assert os.getuid() not in seen["uid"] and seen["groups"] == []
            if os.geteuid() == 0:  # no user namespace: outside it is uid 65534 too
                assert _outer_uid(worker, seen["pid"]) == 65534
            assert seen["caps"] == dict.fromkeys(CAPABILITY_SETS, 0)
            assert seen["extra"] == []  # nothing visible off the allow-list
            assert seen["existing"] == []
            assert all(v in ("ESRCH", "EPERM") for v in seen["signals"].values()), seen
            assert seen["signals"][str(os.getpid())] == "ESRCH"  # the judge: not even named
            assert seen["init"] == "EPERM" and seen["ppid"] == 1  # bubblewrap's init
            assert len(seen["processes"]) <= 3, seen["processes"]  # its own pid namespace
            assert set(seen["writes"].values()) <= {"EROFS", "EACCES", "ENOENT"}, seen
            assert seen["tmp"] == [worker.scratch.name if worker.scratch else ""]
            assert seen["network"] in ("ENETUNREACH", "ECONNREFUSED", "EADDRNOTAVAIL")
        finally:
            worker.stop()
    finally:
        (grade_folder / "report.json").unlink()
        grade_folder.rmdir()
    landed = [Path(f, "planted-by-the-probe.txt") for f in writes]
    for path in (p for p in landed if p.exists()):
        path.unlink()  # (where the sandbox failed: never left behind)
        raise AssertionError(f"the worker wrote {path}")


@NEEDS_THE_SANDBOX
def test_only_p28s_ranks_keep_loopback_for_their_rendezvous(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(policy.TRUSTED_VARIABLE, raising=False)
    port = listener.getsockname()[1]
    for variable, expected in (("DRILL_P28_MODULE", "connected"), ("DRILL_P05_MODULE", None)):
        seen, worker = _probe(tmp_path / variable, variable, port, [], [])
        worker.stop()
        if expected:
            assert seen["network"] == expected
        else:
            assert seen["network"] != "connected"


@NEEDS_THE_SANDBOX
def test_two_workers_side_by_side_see_nothing_of_each_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(policy.TRUSTED_VARIABLE, raising=False)
    first = client.Worker("DRILL_P19_MODULE", tmp_path / "a" / "probe.py", 120, 4096)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "probe.py").write_text("")
    first.start()
    try:
        assert first.scratch is not None and first.process is not None
        fifo_folder = first.scratch / "fork-elsewhere"
        fifo_folder.mkdir()
        os.mkfifo(fifo_folder / "in")
        forbidden = [str(first.scratch), str(fifo_folder / "in")]
        others = [first.process.pid]  # the first's bubblewrap, and its worker inside:
        inner = sandbox.outer_pid(first.process.pid, 2)
        assert inner is not None
        others.append(inner)
        seen, second = _probe(tmp_path / "b", "DRILL_P19_MODULE", 0, forbidden, [], others)
        try:
            assert seen["existing"] == [] and seen["extra"] == []
            assert all(seen["signals"][str(pid)] == "ESRCH" for pid in others), seen["signals"]
            assert len(seen["processes"]) <= 3, seen["processes"]
        finally:
            second.stop()
    finally:
        first.stop()


def test_the_view_holds_torch_numpy_and_what_they_require_and_nothing_of_the_project(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(policy.TRUSTED_VARIABLE, raising=False)
    names = {
        Path(p).name.split("-")[0].removesuffix(".py")
        for p in policy.seen_roots("DRILL_P19_MODULE")
    }
    assert {"torch", "numpy", "sympy", "typing_extensions"} <= names  # sympy: torch's
    assert not {"pytest", "_pytest", "hypothesis", "pluggy", "tqdm"} & names
    assert not any("gptlab" in n or "editable" in n or n.endswith(".pth") for n in names)
    seen = policy.seen_roots("SCHEDULER_MODULE")  # its reference needs tqdm; paged_kv is a sibling
    assert any(Path(p).name == "tqdm" for p in seen)
    assert any(p.endswith("/paged_kv") for p in seen)
    assert not any(p.endswith(("/scheduler", "/gptlab_testkit", "/gptlab_drills")) for p in seen)
    monkeypatch.setenv(policy.TRUSTED_VARIABLE, "1")  # known_bad's fixtures: every root
    assert set(policy.seen_roots("DRILL_P19_MODULE")) >= {
        str(Path(gptlab_drills.__file__).resolve().parents[1])
    }


def _no_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "bwrap", lambda: None)
    monkeypatch.setattr(sandbox, "refusal", sandbox.refusal.__wrapped__)  # not the cached answer


def test_without_a_sandbox_grade_refuses_to_judge_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _no_sandbox(monkeypatch)
    faithful = CHECKOUT / "packages/drills/faithful/good_p19_sdpa_inference.py"
    code = grade.main([f"DRILL_P19_MODULE={faithful}", "--json", str(tmp_path / "j.json")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 4 and len(lines) == 1
    assert lines[0].startswith("grade refuses to judge: no bwrap found")
    assert "the machine needs Linux with bubblewrap" in lines[0]
    monkeypatch.delenv(sandbox.UNSANDBOXED_VARIABLE, raising=False)
    worker = client.Worker("DRILL_P19_MODULE", faithful, 60, 4096)
    with pytest.raises(sandbox.SandboxRefusedError, match="grade refuses to judge"):
        worker.spawn()


def test_the_testkits_own_tests_may_start_a_bare_worker_where_no_sandbox_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_sandbox(monkeypatch)
    monkeypatch.setenv(sandbox.UNSANDBOXED_VARIABLE, "1")
    (tmp_path / "bare.py").write_text("import os\nUID = os.getuid()\n")
    worker = client.Worker("DRILL_P19_MODULE", tmp_path / "bare.py", 60, 4096)
    try:
        worker.start()
        assert os.getuid() == client.RemoteModule(worker).UID  # bare: the grader's own uid
    finally:
        worker.stop()


@NEEDS_THE_SANDBOX
def test_a_judged_worker_cannot_load_the_reference(tmp_path: Path) -> None:
    cheat = tmp_path / "cheat.py"
    cheat.write_text(
        f"try:\n    source = open({str(REFERENCE)!r}).read()\nexcept OSError:\n"
        "    source = ''\nFOUND = 'def decode_attention' in source\n"
    )
    worker = client.Worker("DRILL_P19_MODULE", cheat, 60, 4096)
    try:
        worker.start()
        found = client.RemoteModule(worker).FOUND
    finally:
        worker.stop()
    assert found is False


def test_the_probe_of_this_machine_is_cached_and_says_why_in_one_line() -> None:
    why = sandbox.refusal()
    assert why is None or (why.startswith("grade refuses to judge") and "\n" not in why)
    assert sys.platform.startswith("linux") or why is not None


def test_a_venv_under_tmp_gets_its_folders_made_inside_the_workers_empty_tmp() -> None:
    from gptlab_testkit.judge.sandbox import _ancestors

    made = ["/tmp", "/proc", "/dev", "/usr"]  # /usr a bind: the host's folders below it
    venv = "/tmp/venv/lib/python3.11/site-packages/torch"

    made_here = ["/tmp/venv", "/tmp/venv/lib", "/tmp/venv/lib/python3.11"]
    made_here.append("/tmp/venv/lib/python3.11/site-packages")
    assert _ancestors([venv, "/usr/lib/x"], made) == made_here
    assert _ancestors(["/tmp/gptlab-worker-1"], made) == []  # /tmp itself is made
