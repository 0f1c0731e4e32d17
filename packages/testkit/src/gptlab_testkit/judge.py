"""Judge mode: the process that runs the tests never imports or executes candidate code.

With `GPTLAB_JUDGE=1` (grade's default for the variables in `JUDGED`, `grade --judge`
for the rest of the drills), `candidate(VARIABLE)` returns a `RemoteModule`: a proxy
whose functions run in a `Worker`, a fresh interpreter (not a fork: a fork would carry
the references and the tests in memory) started from `worker.py`. Arguments go by
value (`wire`), results come back by value; an object that must live in the worker
comes back as a handle (`RemoteObject`). Every assertion runs here, on returned values.

What only the worker can see is reported by it and marked so: a forbidden call inside
a guarded block (`oracles.forbidding`) fails with "(worker-reported)". In-place writes
are observed by the judge: the worker sends every tensor argument back after the call
and the judge writes the new values into its own tensors, so `inputs_untouched` and
an in-place contract read the judge's memory.

A candidate that ends or hangs its worker fails the test that was running (the worker
is started afresh for the next test); reaching for a refused module (the reference,
the tests, the testkit, pytest) fails the test, naming it. When the grader runs as
root the worker drops to an unprivileged user (`nobody`) with resource limits, where
that user can run the interpreter; otherwise it runs as the grader's user and says so.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import resource
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from . import reaper, wire

JUDGE_VARIABLE = "GPTLAB_JUDGE"
# The drills whose suites are graded in judge mode by default: functions over tensors
# and plain data (the covered set is measured: faithful candidates pass, known-bad fail).
JUDGED: frozenset[str] = frozenset(
    f"DRILL_{key}_MODULE" for key in ("P03", "P04", "P05", "P06", "P19")
)
REFUSED = (
    "gptlab_testkit", "gptlab_drills", "gptlab_practice", "pytest", "_pytest", "pluggy",
    "hypothesis", "_hypothesis_pytestplugin", "xdist", "pytest_timeout", "tinygpt", "modern_lm",
    "cache_aware_lm", "kv_cache", "prefix_cache", "chunked_prefill", "speculative", "paged_kv",
    "scheduler", "stdlib_pair", "tiny_gpt", "speculative_decoding", "conftest",
)  # fmt: skip
MAX_SOURCE_BYTES = 4 * 1024 * 1024
SAFE_ERRORS: dict[str, type[BaseException]] = {
    e.__name__: e
    for e in (ValueError, TypeError, RuntimeError, IndexError, KeyError, AssertionError,
              NotImplementedError, ZeroDivisionError, AttributeError, OverflowError)
}  # fmt: skip


def judged(variable: str) -> bool:
    """Is this variable's candidate run in a worker? `GPTLAB_JUDGE`: `all` (every drill,
    `grade --judge`), `default` (the variables in JUDGED: grade's default), else none."""
    mode = os.environ.get(JUDGE_VARIABLE, "")
    if mode == "all":
        return variable.startswith("DRILL_") or variable in JUDGED
    return mode == "default" and variable in JUDGED


class RemoteError(RuntimeError):
    """An exception of the candidate's whose type is not one the judge re-raises as is."""


class WorkerGoneError(AssertionError):
    """The worker ended or hung during a call: the test fails."""


def _site_dirs() -> list[str]:
    """Where torch (and numpy) are installed: the worker's only import roots."""
    found = []
    for module in ("torch", "numpy"):
        with contextlib.suppress(ImportError):
            found.append(str(Path(str(__import__(module).__file__)).resolve().parents[1]))
    return sorted(set(found))


def _unprivileged() -> tuple[int, int] | None:
    """(uid, gid) of `nobody` when we are root and it can run this interpreter; else None."""
    if os.geteuid() != 0:
        return None
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    for folder in [*Path(sys.executable).resolve().parents, *map(Path, _site_dirs())]:
        mode = folder.stat().st_mode
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return None  # e.g. an interpreter under /root: nobody cannot reach it
    return nobody.pw_uid, nobody.pw_gid


def _limits(memory_mib: int, user: tuple[int, int] | None) -> Any:
    def apply() -> None:
        os.setsid()
        if memory_mib > 0:
            size = memory_mib * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if user is not None:
            os.setgroups([])
            os.setgid(user[1])
            os.setuid(user[0])
            resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))

    return apply


class Worker:
    """One candidate module in a fresh interpreter; restarted after it dies or hangs."""

    def __init__(self, variable: str, path: Path, timeout_s: float, memory_mib: int) -> None:
        self.variable, self.path = variable, path
        self.timeout_s, self.memory_mib = timeout_s, memory_mib
        self.process: subprocess.Popen[bytes] | None = None
        self.names: list[str] = []
        self.file = str(path)
        self.user = _unprivileged()
        self.generation = 0
        self.owner = os.getpid()

    # -- life
    def start(self) -> None:
        judge_in, worker_out = os.pipe()
        worker_in, judge_out = os.pipe()
        scratch = Path(tempfile.mkdtemp(prefix="gptlab-worker-"))
        if self.user is not None:
            os.chown(scratch, *self.user)
        command = [
            sys.executable, "-I", "-S", "-B", str(Path(__file__).with_name("worker.py")),
            str(worker_in), str(worker_out), ",".join(REFUSED), *_site_dirs(),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command,
            pass_fds=(worker_in, worker_out),
            cwd=scratch,
            env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
            preexec_fn=_limits(self.memory_mib, self.user),
            stdin=subprocess.DEVNULL,
        )
        os.close(worker_in)
        os.close(worker_out)
        self.fd_in, self.fd_out = judge_in, judge_out
        self.generation += 1
        reply = self.request({"op": "load", "main": _plain_name(self.path),
                              "files": _sources(self.path)}, [])  # fmt: skip
        self.names, self.file = list(reply["names"]), str(reply.get("file") or self.path)

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, 9)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        for fd in (self.fd_in, self.fd_out):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.process = None

    # -- one exchange
    def request(self, message: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
        if self.owner != os.getpid():  # a forked test process: its own worker, not ours
            self.process, self.owner = None, os.getpid()
        if self.process is None:
            self.start()
        deadline = time.monotonic() + self.timeout_s if self.timeout_s > 0 else None
        try:
            wire.send(self.fd_out, message, blobs)
            reply, reply_blobs = wire.receive(self.fd_in, deadline)
        except wire.WireTimeoutError:
            self.stop()
            raise WorkerGoneError(
                f"timed out after {self.timeout_s:g} s (the candidate's worker was ended)"
            ) from None
        except (wire.WireError, OSError) as error:
            code = self.process.poll() if self.process else None
            self.stop()
            raise WorkerGoneError(
                f"crashed: the candidate's worker ended during the call ({error}; "
                f"exit status {code})"
            ) from None
        except BaseException:  # pytest-timeout, Ctrl-C: the exchange is out of step
            self.stop()
            raise
        reply["_blobs"] = reply_blobs
        refused = reply.get("refused") or []
        if refused:
            raise AssertionError(
                f"the candidate reached for {', '.join(map(str, refused))}: out of its reach "
                "(the reference, the tests and the grader are refused; worker-reported)"
            )
        if "raised" in reply:
            name, text, _trace = reply["raised"]
            error_type = SAFE_ERRORS.get(str(name))
            if message.get("op") == "load":
                raise ImportError(f"{name}: {text}")
            if error_type is None:
                raise RemoteError(f"{name}: {text}")
            raise error_type(text)
        return reply

    def decode(self, data: Any, blobs: list[bytes]) -> Any:
        generation = self.generation
        return wire.decode(
            data, blobs, lambda ident, kind: RemoteObject(self, ident, kind, generation)
        )


def _plain_name(path: Path) -> str:
    return path.stem


def _sources(path: Path) -> dict[str, list[str]]:
    """The submission's plain modules (its folder's *.py) as {name: [path, source]}."""
    files: dict[str, list[str]] = {}
    total = 0
    for file in sorted(path.parent.glob("*.py")):
        if not file.stem.isidentifier():
            continue
        source = file.read_text(encoding="utf-8", errors="replace")
        total += len(source)
        if total > MAX_SOURCE_BYTES:
            break
        files[file.stem] = [str(file), source]
    for stem, entry in list(files.items()):
        plain = stem.removesuffix("_attempt")
        if plain != stem and plain not in files:
            files[plain] = entry
    files.setdefault(path.stem, [str(path), path.read_text(encoding="utf-8")])
    return files


# -- the proxies


def _forbidden_in_effect() -> list[Any]:
    """The judge's `forbidding` guards active around this call (their modes)."""
    from torch.overrides import _get_current_function_mode_stack

    from .oracles import _ForbiddenCalls

    stack = _get_current_function_mode_stack()  # type: ignore[no-untyped-call]
    return [mode for mode in stack if isinstance(mode, _ForbiddenCalls)]


def _torch_name(function: Any) -> str:
    """`cat` for torch.cat, `Tensor.multinomial` for a tensor method (the worker's lookup)."""
    name = str(getattr(function, "__name__", ""))
    if getattr(torch, name, None) is function:
        return name
    return f"Tensor.{name}" if getattr(torch.Tensor, name, None) is function else name


def _call(worker: Worker, handle: int | None, name: str | None, args: Any, kwargs: Any) -> Any:
    guards = _forbidden_in_effect()
    forbid = sorted({_torch_name(f) for mode in guards for f in mode.forbidden})
    blobs: list[bytes] = []
    message = {
        "op": "call",
        "handle": handle,
        "name": name,
        "args": wire.encode(list(args), blobs),
        "kwargs": wire.encode(dict(kwargs), blobs),
        "forbid": forbid,
    }
    reply = worker.request(message, blobs)
    reply_blobs = reply.pop("_blobs")
    _mirror([*args, *kwargs.values()], reply.get("after") or [], reply_blobs, worker)
    for mode in guards:
        mode.seen.extend(f"{seen} (worker-reported)" for seen in reply.get("seen") or [])
    return worker.decode(reply["value"], reply_blobs)


def _mirror(sent: list[Any], after: list[Any], blobs: list[bytes], worker: Worker) -> None:
    """Write what the call left in each tensor argument into the judge's own tensor."""
    for original, data in zip(sent, after, strict=False):
        if data is None:
            continue
        value = worker.decode(data, blobs)
        if isinstance(original, torch.Tensor) and isinstance(value, torch.Tensor):
            if original.device.type == "meta":
                continue  # no data to write
            if value.shape != original.shape or value.dtype != original.dtype:
                with torch.no_grad():
                    original.set_(value.to(original.device))  # type: ignore[call-overload]
            elif not torch.equal(value.to(original.device), original.detach()):
                with torch.no_grad():
                    original.copy_(value)
        elif isinstance(original, torch.Generator) and isinstance(value, torch.Generator):
            original.set_state(value.get_state())


class RemoteCallable:
    def __init__(self, worker: Worker, handle: int | None, name: str | None) -> None:
        self._worker, self._handle, self._name = worker, handle, name
        self.__name__ = name or "object"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._worker, self._handle, self._name, args, kwargs)

    def __repr__(self) -> str:
        return f"<candidate callable {self._name} (in the worker)>"


class RemoteObject:
    """An object living in the worker: attributes and calls go there."""

    def __init__(self, worker: Worker, ident: int, kind: str, generation: int) -> None:
        self._worker, self._ident, self._kind = worker, ident, kind
        self._generation = generation

    def _live(self) -> None:
        if self._worker.generation != self._generation or self._worker.process is None:
            raise WorkerGoneError(f"the candidate's {self._kind} was lost when its worker ended")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        self._live()
        reply = self._worker.request({"op": "getattr", "handle": self._ident, "name": name}, [])
        value = self._worker.decode(reply["value"], reply.pop("_blobs"))
        if isinstance(value, RemoteObject):
            return _Bound(self, name, value)
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._live()
        return _call(self._worker, self._ident, None, args, kwargs)

    def __repr__(self) -> str:
        return f"<candidate {self._kind} (in the worker)>"


class _Bound(RemoteObject):
    """An attribute of a remote object that is itself remote (a method, a submodule)."""

    def __init__(self, owner: RemoteObject, name: str, value: RemoteObject) -> None:
        super().__init__(value._worker, value._ident, value._kind, value._generation)
        self._owner, self._attr = owner, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._owner._live()
        return _call(self._worker, self._owner._ident, self._attr, args, kwargs)


class RemoteModule:
    """What `candidate(VARIABLE)` returns in judge mode: the candidate module, by proxy."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self.__file__ = worker.file
        self.__name__ = f"candidate:{worker.variable}"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name not in self._worker.names:
            raise AttributeError(f"the candidate module has no attribute {name!r}")
        reply = self._worker.request({"op": "getattr", "handle": None, "name": name}, [])
        value = self._worker.decode(reply["value"], reply.pop("_blobs"))
        if isinstance(value, RemoteObject):
            return RemoteCallable(self._worker, None, name)
        return value


_WORKERS: list[Worker] = []


def end_workers() -> None:
    """Before this process writes any result: every worker and all it started are ended
    (a setsid or double-forked child of a worker comes to this process, a subreaper)."""
    if not _WORKERS:
        return
    for worker in _WORKERS:
        worker.stop()
    reaper.end_tree()


def remote_module(variable: str, spec: str) -> RemoteModule:
    """Start the worker for this candidate file; ImportError when it cannot be imported."""
    if not _WORKERS:
        reaper.become_subreaper()
    timeout = float(os.environ.get("GPTLAB_JUDGE_TIMEOUT", "60"))
    memory = int(os.environ.get("GPTLAB_JUDGE_MEMORY_MIB", "4096"))
    worker = Worker(variable, Path(spec).resolve(), timeout, memory)
    _WORKERS.append(worker)
    worker.start()
    return RemoteModule(worker)
