"""The judge's side of a judged candidate: the tests' process never imports or executes
candidate code.

With `GPTLAB_JUDGE=1` (grade's default for the variables in `JUDGED`, `grade --judge`
for the rest of the drills), `candidate(VARIABLE)` returns a `RemoteModule`: a proxy
whose functions run in a `Worker`, a fresh interpreter (not a fork: a fork would carry
the references and the tests in memory) started from `gptlab_worker`. Arguments go by
value (`wire`), results come back by value; an object that must live in the worker
comes back as a handle (`RemoteObject`). Every assertion runs here, on returned values.

What only the worker can see is reported by it and marked so: a forbidden call inside
a guarded block (`oracles.forbidding`) fails with "(worker-reported)", and so does a test
decided by a tensor's identity, data pointer or shared storage (`worker_facts`: every
tensor the worker sends carries them; a view of one goes back by reference). A handle's
whole state (`boundary.state_fingerprint` of a remote object) is dumped by the worker.
In-place writes are observed by the judge: the worker sends every tensor argument (in
lists, tuples and dicts too) back after the call and the judge writes the new values
into its own tensors, so `inputs_untouched` and an in-place contract read the judge's
memory.

A test process the pool forks gets a fork of the worker its parent started (`_fork`:
torch and the candidate are imported once, not per test file). A candidate that ends or
hangs its worker fails the test that was running (the worker is started afresh for the
next test); reaching for a refused module (the reference,
the tests, the testkit, pytest) fails the test, naming it. Every worker starts in a bubblewrap
sandbox (`sandbox`): uid 65534 with no capability, its own pid, IPC and network
namespaces, and a root holding only the interpreter, torch and numpy, its scratch folder
and the submission's files; where none can be made, no worker starts
(`sandbox.SandboxRefusedError`) and grade refuses to judge.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from gptlab_worker import wire

from gptlab_testkit.judge import (
    advisory,
    lending,
    raised_at,
    reaper,
    remote_autograd,
    sandbox,
    shipping,
    worker_facts,
)
from gptlab_testkit.judge.policy import (
    LOOPBACK_VARIABLES,
    MAX_SOURCE_BYTES,
    distributions,
    limits,
    refused_modules,
    sandboxed,
    siblings,
    site_dirs,
    trusted,
    worker_environment,
)
from gptlab_testkit.loading import signatures


class RemoteError(RuntimeError):
    """An exception of the candidate's whose type is not one the judge re-raises as is."""


class WorkerGoneError(AssertionError):
    """The worker ended or hung during a call: the test fails."""


class WorkerTimedOutError(WorkerGoneError):
    """The worker did not answer within its timeout (it was ended)."""


SAFE_ERRORS: dict[str, type[BaseException]] = {**wire.ERRORS, "AssertionError": AssertionError}


class Worker:
    """One candidate module in a fresh interpreter; restarted after it dies or hangs."""

    def __init__(self, variable: str, path: Path, timeout_s: float, memory_mib: int) -> None:
        self.variable, self.path = variable, path
        self.timeout_s, self.memory_mib = timeout_s, memory_mib
        self.process: subprocess.Popen[bytes] | None = None
        self.names: list[str] = []
        self.file_names: set[str] = set()  # the submission's files (their frames are shown)
        self.file = str(path)
        self.user = sandbox.worker_user()  # who owns what it may write (its FIFOs)
        self.scratch: Path | None = None  # its folder: its own, or its zygote's
        self.generation = 0
        self.owner = os.getpid()
        self.zygote: tuple[int, int, int, Path] | None = None  # see `_fork`
        self.forked_in = 0
        self.lent: OrderedDict[int, Any] = OrderedDict()  # id -> what we lent it, recent last
        self.owned: set[int] = set()  # lent objects a test's own module gave (`lending`)
        self.methods: set[tuple[str, str]] = set()  # (class name, method name) seen so far
        self.classes: dict[str, RemoteClass] = {}  # the candidate module's classes, by name
        self.random_state: torch.Tensor | None = None  # the CPU random state the worker has
        self.exchanges = 0  # requests sent so far
        self.on_entered: Any = None  # a rank's: hears each collective the worker enters
        self.rng_shape = torch.get_rng_state().shape

    # -- life
    def start(self) -> None:
        self.spawn()
        self.load()

    def spawn(self) -> None:
        """Start the interpreter (it imports torch while we go on; `load` waits for it)."""
        scratch = self.scratch = sandbox.scratch_folder()
        script = sandbox.stage(scratch)
        _copy_submission(self.path, scratch / "submission")
        argv = [
            str(Path(sys.executable).resolve()), "-I", "-S", "-B", str(script),
            "WORKER_IN", "WORKER_OUT", ",".join(refused_modules(self.variable)),
            *site_dirs(self.variable),
        ]  # fmt: skip
        try:
            command, env = sandboxed(self.variable, scratch, argv, _fixture_folders(self.path))
        except sandbox.SandboxRefusedError:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        judge_in, worker_out = os.pipe()
        worker_in, judge_out = os.pipe()
        fds = {"WORKER_IN": str(worker_in), "WORKER_OUT": str(worker_out)}
        self.process = subprocess.Popen(
            [fds.get(arg, arg) for arg in command],
            pass_fds=(worker_in, worker_out),
            cwd=scratch,
            env=env,
            preexec_fn=limits(self.memory_mib),
            stdin=subprocess.DEVNULL,
        )
        os.close(worker_in)
        os.close(worker_out)
        self.fd_in, self.fd_out = judge_in, judge_out
        self.generation += 1
        self.random_state = None

    def load(self) -> None:
        """Send the candidate's files and import them there (ImportError when it fails)."""
        files = _sources(self.path, self.scratch)
        reply = self.request({"op": "load", "main": _plain_name(self.path), "files": files,
                              "seeds": _seed_stand_ins(self.variable, files)}, [])  # fmt: skip
        copies = {path: _host_path(self.path, path) for path, _ in files.values()}
        self.file_names = {Path(path).name for path, _ in files.values()}
        self.names = list(reply["names"])
        self.file = copies.get(str(reply.get("file")), str(self.path))  # the judge's own path

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
        spawned_here = isinstance(self.process, subprocess.Popen) and self.owner == os.getpid()
        if spawned_here and self.scratch is not None:  # its own folder (a fork's: its zygote's)
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.process = None

    def _fork(self) -> bool:
        """A worker for a forked test process, forked from the one its parent started (the
        zygote: torch and the candidate already imported, so no start of 3-7 s per test
        file). The fork talks over two FIFOs in the zygote's scratch folder; requests to
        the zygote are serialised by a lock there. False: start one afresh instead."""
        if self.zygote is None:
            return False
        fd_in, fd_out, pid, scratch = self.zygote
        self.scratch = scratch
        try:
            folder = Path(tempfile.mkdtemp(prefix=f"fork-{os.getpid()}-", dir=scratch))
            fifos = [folder / "in", folder / "out"]
            for fifo in fifos:
                os.mkfifo(fifo, 0o600)
                if self.user is not None:
                    os.chown(fifo, *self.user)
            if self.user is not None:
                os.chown(folder, *self.user)
            deadline = time.monotonic() + (self.timeout_s if self.timeout_s > 0 else 60.0)
            with open(scratch / ".fork.lock", "a") as lock:
                import fcntl

                fcntl.flock(lock, fcntl.LOCK_EX)
                wire.send(fd_out, {"op": "fork", "fifos": [str(f) for f in fifos]}, [])
                reply, _ = wire.receive(fd_in, deadline)
            child = sandbox.outer_pid(pid, int(reply["pid"]))  # it names itself in its pid ns
            if child is None:
                raise OSError("the forked worker is not found")
            self.fd_out = _open_fifo(fifos[0], os.O_WRONLY, child, deadline)
            self.fd_in = _open_fifo(fifos[1], os.O_RDONLY, child, deadline)
        except (OSError, KeyError, TypeError, ValueError, wire.WireError):
            self.zygote = None  # it cannot fork (CUDA, gone): start afresh from now on
            return False
        self.process = _Forked(child)  # type: ignore[assignment]
        if self.forked_in == os.getpid():  # a second fork here: the first one's objects are gone
            self.generation += 1
        self.forked_in = os.getpid()
        return True

    # -- one exchange
    def request(
        self,
        message: dict[str, Any],
        blobs: list[bytes],
        before_raise: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Send one message and wait for its answer; the candidate's exception is raised
        here, after `before_raise` has read the answer (a call's arguments mirrored)."""
        if self.owner != os.getpid():  # a forked test process: its own worker, not ours
            alive = self.process is not None and _Forked(self.process.pid).poll() is None
            if alive and self.process is not None and self.scratch is not None:
                self.zygote = (self.fd_in, self.fd_out, self.process.pid, self.scratch)
            self.process, self.owner = None, os.getpid()
        if self.process is None and not self._fork():
            self.start()
        if message.get("op") not in ("load", "fork"):  # what the test did since, carried over
            message["writes"] = _test_writes(self, blobs)
            message["grads"] = _test_gradients(self, blobs)
            self._send_random_state(message, blobs)
        deadline = time.monotonic() + self.timeout_s if self.timeout_s > 0 else None
        self.exchanges += 1  # the worker runs code: what we remember of its objects is old
        try:
            wire.send(self.fd_out, message, blobs)
            reply, reply_blobs = wire.receive(self.fd_in, deadline)
            while reply.get("op") in ("callback", "entered"):
                if reply["op"] == "entered":  # a rank's collective begins (`ranks`)
                    self._entered(reply.get("call"))
                else:  # the candidate uses an object we lent it
                    answer, answer_blobs = lending.answer(self, reply, reply_blobs)
                    wire.send(self.fd_out, answer, answer_blobs)
                reply, reply_blobs = wire.receive(self.fd_in, deadline)
        except wire.WireTimeoutError:
            self.stop()
            raise WorkerTimedOutError(
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
        if "rng" in reply:
            self._take_random_state(reply["rng"], reply_blobs)
        refused = reply.get("refused") or []
        if refused:
            raise AssertionError(
                f"the candidate reached for {', '.join(map(str, refused))}: out of its reach "
                "(the reference, the tests and the grader are refused; worker-reported)"
            )
        if "raised" in reply:
            if before_raise is not None:
                before_raise(reply)
            name, text = reply["raised"][:2]
            error_type = SAFE_ERRORS.get(str(name))
            if message.get("op") == "load":
                raise ImportError(f"{name}: {text}")
            raised = error_type(text) if error_type else RemoteError(f"{name}: {text}")
            where = raised_at.frames_from(reply.get("where"), self.path.parent, self.file_names)
            raised_at.attach(raised, where)  # shown beside the failure, never in its message
            raise raised
        return reply

    def _entered(self, call: Any) -> None:
        """A collective the worker says it entered, for the rank that joined it a group."""
        if self.on_entered is None:
            raise wire.WireError("a collective from a worker in no group")
        valid = isinstance(call, list) and len(call) == 2 and all(isinstance(s, str) for s in call)
        if not valid:
            raise wire.WireError("malformed collective")
        self.on_entered(call[0][:100], call[1][:2000])

    # One global random stream, as in one process: the test's `torch.manual_seed` seeds the
    # candidate's initialisation, and the candidate's draws advance the test's stream.
    def _send_random_state(self, message: dict[str, Any], blobs: list[bytes]) -> None:
        state = torch.get_rng_state()
        if self.random_state is None or not torch.equal(state, self.random_state):
            message["rng"] = wire.encode(state, blobs)
            self.random_state = state

    def _take_random_state(self, data: Any, blobs: list[bytes]) -> None:
        state = wire.decode(data, blobs)
        valid = isinstance(state, torch.Tensor) and state.dtype == torch.uint8
        if not valid or state.shape != self.rng_shape:
            raise wire.WireError("malformed random state")
        torch.set_rng_state(state)
        self.random_state = state

    def decode(self, data: Any, blobs: list[bytes], *, returned: bool = True) -> Any:
        generation = self.generation

        def facts(tensor: torch.Tensor, reported: dict[str, Any]) -> None:
            worker_facts.record(tensor, reported, self, generation, returned=returned)

        def handle(ident: int, kind: str, of_module_class: bool) -> RemoteObject:
            proxy = self.class_named(kind) if of_module_class else None
            kind_type: type[RemoteObject] = proxy if proxy is not None else RemoteObject  # type: ignore[assignment]
            return _remote_object(kind_type, self, ident, kind, generation)

        walk = isinstance(data, dict) and "I" in data  # a module's walk, in one message
        worker_facts.walking(walk)
        try:
            return wire.decode(data, blobs, handle, facts, lent=self.lent_object)
        finally:
            worker_facts.walking(False)

    def class_named(self, name: str, facts: Any = None) -> RemoteClass | None:
        """The judge's stand-in type for the candidate module's class `name` (made once,
        from what the worker reports of it: `facts`, or asked now)."""
        if name in self.classes:
            return self.classes[name]
        if not name.isidentifier() or name not in self.names:
            return None
        if facts is None:
            reply = self.request({"op": "getattr", "handle": None, "name": name}, [])
            facts = reply.get("class")
        if not isinstance(facts, dict):
            return None
        self.classes[name] = _remote_class(self, name, facts)
        return self.classes[name]

    def lent_object(self, data: dict[str, Any]) -> Any:
        """A `{"j": id}` from the worker: one of our objects we lent it, and nothing else."""
        ident = data.get("j")
        if not isinstance(ident, int) or ident not in self.lent:
            raise wire.WireError("a lent object the judge does not hold")
        self.lent.move_to_end(ident)
        return self.lent[ident]

    def reference_of(self, value: Any) -> dict[str, Any]:
        """How `value`, which cannot travel by value, is sent to this worker: its own object
        by handle, a test's bare `object()` as a stand-in, anything else of ours lent
        (another candidate's object too: a folder's model handed to its speculative
        decoder, whose calls go through the judge to that model's worker)."""
        if isinstance(value, RemoteObject) and value._worker is self:
            value._live()
            return {"h": value._ident, "kind": value._kind}
        if isinstance(value, RemoteCallable) and value._worker is self and value._name:
            return {"p": value._name}
        if isinstance(value, RemoteClass) and value._worker is self:
            return {"p": value._path}
        if type(value) is object:
            return {"o": "object"}
        if isinstance(value, torch.Tensor):  # only a graph's output is lent (`lending`)
            return {"j": self._lend(value), "kind": "Tensor"}
        source = shipping.as_source(value)
        if source is not None:  # a pure function of the test's: defined again there
            return {"src": source}
        lending.check_lendable(value)
        reference = {"j": self._lend(value), "kind": type(value).__qualname__[:100]}
        if isinstance(value, torch.nn.Module):  # an nn.Module there too (`worker.LentModule`)
            reference["module"] = 1
        return reference

    def _lend(self, value: Any) -> int:
        """Hold `value` for the worker's callbacks; the least recently used goes first."""
        self.lent[id(value)] = value
        self.lent.move_to_end(id(value))
        while len(self.lent) > lending.MAX_LENT:
            self.owned.discard(self.lent.popitem(last=False)[0])
        return id(value)

    def read(self, ref: list[Any]) -> Any:
        """The current values of a view of a tensor this worker sent (`worker_facts`)."""
        reply = self.request({"op": "read", "ref": ref}, [])
        return self.decode(reply["value"], reply.pop("_blobs"))


class _Forked:
    """A worker forked by the zygote: not our child (the zygote reaps it), found by pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        with contextlib.suppress(ChildProcessError):  # ours once its zygote ended (we are
            if os.waitpid(self.pid, os.WNOHANG)[0]:  # a subreaper): reaped, not a zombie
                return -1
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return -1
        except PermissionError:
            pass
        return None

    def kill(self) -> None:
        os.kill(self.pid, 9)

    def wait(self) -> int:
        for _ in range(500):
            if self.poll() is not None:
                break
            time.sleep(0.01)
        return -1


def _open_fifo(path: Path, mode: int, child: int, deadline: float) -> int:
    """Open our end of a fork's FIFO; its end is open (and, for reading, it said "!")
    before this returns, so an EOF later means it ended. OSError when it did not come."""
    while True:
        try:
            fd = os.open(path, mode | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            fd = -1
        if fd >= 0 and mode == os.O_WRONLY:
            os.set_blocking(fd, True)
            return fd
        if fd >= 0:
            while True:
                with contextlib.suppress(BlockingIOError):
                    if os.read(fd, 1) == b"!":
                        os.set_blocking(fd, True)
                        return fd
                if time.monotonic() > deadline or _Forked(child).poll() is not None:
                    os.close(fd)
                    raise OSError("the forked worker did not connect")
                time.sleep(0.005)
        if time.monotonic() > deadline or _Forked(child).poll() is not None:
            raise OSError("the forked worker did not connect")
        time.sleep(0.005)


def _plain_name(path: Path) -> str:
    return path.stem


def _seed_stand_ins(variable: str, files: dict[str, list[str]]) -> dict[str, Any]:
    """The seed's lab names the worker may answer with a reference (`seed_modules`, as a
    one-file attempt in-process gets them): those of the candidate's siblings that the
    submission's folder lacks, as {seed name: [package, aliases]}."""
    from gptlab_testkit.loading.seed_modules import SEED_MODULES

    return {  # (a seed name that is its package's own name is that package: no stand-in)
        name: [package, aliases]
        for name, (package, aliases) in SEED_MODULES.items()
        if package in siblings(variable) and name not in files and name != package
    }


def _submission_files(path: Path) -> dict[str, str]:
    """The submission's plain modules (its folder's *.py, the file itself among them) as
    {file name: source}, read without following a link (ImportError for a link: a link
    would carry whatever it points at, the reference included)."""
    found: dict[str, str] = {}
    total = 0
    plain = [f for f in sorted(path.parent.glob("*.py")) if f.stem.isidentifier()]
    for file in [path, *(f for f in plain if f.name != path.name)]:
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as error:
            if file.is_symlink():
                raise ImportError(f"{file.name} is a symbolic link: not graded") from None
            raise ImportError(f"{file.name} cannot be read: {error.strerror}") from None
        with open(fd, encoding="utf-8", errors="replace") as opened:
            source = opened.read(MAX_SOURCE_BYTES + 1)
        total += len(source)
        if total > MAX_SOURCE_BYTES and file != path:
            break
        found[file.name] = source
    return found


def _copy_submission(path: Path, folder: Path) -> None:
    """The submission's files copied into the worker's scratch folder (read-only there);
    a file that cannot be copied is left out (its load then fails, naming it)."""
    folder.mkdir(mode=0o755)
    with contextlib.suppress(ImportError):
        for name, source in _submission_files(path).items():
            (folder / name).write_text(source, encoding="utf-8")


def _fixture_folders(path: Path) -> tuple[str, ...]:
    """A trusted fixture's folder and its siblings' (known_bad's stranger-shaped candidates
    read the faithful stranger they copy, in the faithful folder beside theirs): seen where
    they lie."""
    if not trusted():
        return ()
    return (str(path.resolve().parent.parent),)


def _sources(path: Path, scratch: Path | None) -> dict[str, list[str]]:
    """The submission's plain modules as {name: [path, source]}: the path its copy has
    in the worker's scratch folder (where a candidate reading its own file finds it; a
    trusted fixture keeps its own path, beside the folders it reads)."""
    copies = scratch / "submission" if scratch is not None and not trusted() else path.parent
    files = {
        Path(name).stem: [str(copies / name), source]
        for name, source in _submission_files(path).items()
    }
    for stem, entry in list(files.items()):
        plain = stem.removesuffix("_attempt")
        if plain != stem and plain not in files:
            files[plain] = entry
    return files


def _host_path(path: Path, copy: str) -> str:
    """The submission's own path of a file the worker knows by its copy's path."""
    return str(path.parent / Path(copy).name)


# -- the proxies


def _modes_in_effect(kind: type) -> list[Any]:
    """The judge's guards of this kind active around this call (`forbidding`'s modes,
    `CountedCalls`)."""
    from torch.overrides import _get_current_function_mode_stack

    stack = _get_current_function_mode_stack()  # type: ignore[no-untyped-call]
    return [mode for mode in stack if isinstance(mode, kind)]


def _torch_name(function: Any) -> str:
    """`cat` for torch.cat, `Tensor.multinomial` for a tensor method (the worker's lookup)."""
    name = str(getattr(function, "__name__", ""))
    if getattr(torch, name, None) is function:
        return name
    return f"Tensor.{name}" if getattr(torch.Tensor, name, None) is function else name


def _call(worker: Worker, handle: int | None, name: str | None, args: Any, kwargs: Any) -> Any:
    from gptlab_testkit.judge.watched_calls import CountedCalls

    counters = _modes_in_effect(CountedCalls)
    for counter in counters:  # the judge's own wire work is no call of the candidate's
        counter.paused += 1
    try:
        value, calls, largest = _call_worker(worker, handle, name, args, kwargs, bool(counters))
    finally:
        for counter in counters:
            counter.paused -= 1
    for counter in counters:
        counter.calls += calls
        counter.largest = max(counter.largest, largest)
    return value


def _call_worker(
    worker: Worker, handle: int | None, name: str | None, args: Any, kwargs: Any, count: bool
) -> tuple[Any, int, int]:
    """The call made in the worker: its value, and when asked to `count`, how many torch
    calls it made there and the most elements one returned (worker-reported)."""
    from gptlab_testkit.judge.watched_calls import ForbiddenCalls, launch_watchers

    guards = _modes_in_effect(ForbiddenCalls)
    launch_watched = launch_watchers()
    forbid = sorted({_torch_name(f) for mode in guards for f in mode.forbidden})
    blobs: list[bytes] = []
    bases, shared = _shared_memory([*args, *kwargs.values()])
    through = remote_autograd.inputs_requiring_grad(args, kwargs)

    def refs(tensor: torch.Tensor) -> list[Any] | None:
        if through and tensor.requires_grad:  # by value: a leaf there that collects its grad
            return None
        return shared(tensor) or worker_facts.reference(tensor, worker)

    message = {
        "op": "call",
        "handle": handle,
        "name": name,
        "bases": wire.encode(bases, blobs),
        "args": wire.encode(list(args), blobs, worker.reference_of, refs=refs),
        "kwargs": wire.encode(dict(kwargs), blobs, worker.reference_of, refs=refs),
        "forbid": forbid,
        "count": count,
        "launches": bool(launch_watched),
        # the call runs in the worker under the judge's grad and inference modes
        "grad": torch.is_grad_enabled(),
        "inference": torch.is_inference_mode_enabled(),
        "autocast": _autocast_state(),  # and under its autocast (PT12)
    }
    sent = [*args, *kwargs.values()]
    # A raise still mirrors what the call left (a write before a late check is seen).
    reply = worker.request(
        message,
        blobs,
        before_raise=lambda r: _mirror(sent, r.get("after") or [], r["_blobs"], worker),
    )
    reply_blobs = reply.pop("_blobs")
    _mirror(sent, reply.get("after") or [], reply_blobs, worker)
    if isinstance(reply.get("grad_after"), bool):  # the candidate left grad mode switched,
        torch.set_grad_enabled(reply["grad_after"])  # as it would have left ours (worker-reported)
    for mode in guards:
        mode.seen.extend(f"{seen} (worker-reported)" for seen in reply.get("seen") or [])
    counts = [reply.get("calls") or 0, reply.get("largest") or 0]
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in counts):
        raise wire.WireError("malformed call count")
    if launch_watched:
        launches = _launches(reply.get("launches"))
        for watcher in launch_watched:
            watcher.heard(launches)
    value = worker.decode(reply["value"], reply_blobs)
    if isinstance(value, dict | list) and isinstance(reply.get("serial"), int):
        worker_facts.returned_object(value, worker, reply["serial"])
    if isinstance(value, RemoteObject) and isinstance(reply.get("fields"), dict):
        value._remember_fields(worker.decode(reply["fields"], reply_blobs))
    if through:  # the test's backward goes on through the call into its own tensors
        value = remote_autograd.connect(worker, value, through)
    return value, counts[0], counts[1]


def _launches(reported: Any) -> list[dict[str, Any]]:
    """The worker's list of Triton launches, each checked for form (worker-reported)."""

    def natural(n: Any) -> bool:
        return isinstance(n, int) and not isinstance(n, bool) and n >= 0

    def well_formed(launch: Any) -> bool:
        return (
            isinstance(launch, dict)
            and isinstance(launch.get("kernel"), str)
            and isinstance(launch.get("grid"), list)
            and len(launch["grid"]) == 3
            and all(natural(n) for n in launch["grid"])
            and isinstance(launch.get("ints"), dict)
            and all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in launch["ints"].items()
            )
        )

    if not isinstance(reported, list) or not all(well_formed(x) for x in reported):
        raise wire.WireError("malformed launch records")
    return [dict(launch) for launch in reported]


def _test_writes(worker: Worker, blobs: list[bytes]) -> list[Any]:
    """What the test wrote since the last call into a tensor that stands for one of the
    worker's (a returned tensor, an argument the worker kept a copy of): [serial, value]
    pairs, written there before the call, as they would be in one process."""
    return [
        [facts.serial, wire.encode(facts.copy, blobs)]
        for facts in worker_facts.written_by_test(worker)
    ]


def _test_gradients(worker: Worker, blobs: list[bytes]) -> list[Any]:
    """The gradient the test's backward left on its copy of a worker tensor (an output, a
    parameter) since the last call: [serial, gradient] pairs, carried on into the worker's
    graph before the call (`worker.Server.backward`)."""
    return [
        [serial, wire.encode(gradient, blobs)]
        for serial, gradient in worker_facts.gradients_by_test(worker)
    ]


def _signature(worker: Worker, handle: int | None, name: str) -> Any:
    """The candidate's signature of `name`: read from the submitted source where it settles
    it (`signatures`), else the worker's word on it, noted as advisory."""
    import inspect

    if handle is None:
        with contextlib.suppress(ImportError):
            files = _submission_files(worker.path)
            read = signatures.from_source(files, worker.path.stem, name)
            if read is not None:
                return read
    advisory.consulted("signature")
    reply = worker.request({"op": "signature", "handle": handle, "name": name}, [])
    rows = reply["value"]
    if not isinstance(rows, list) or len(rows) > 256:
        raise wire.WireError("malformed signature")
    parameters = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 4 or not str(row[0]).isidentifier():
            raise wire.WireError("malformed signature")
        if not isinstance(row[3], bool | int | float | str | None):
            raise wire.WireError("malformed signature")
        kind = inspect._ParameterKind(int(row[1]))
        # a default that is plain data comes as itself, any other as a stand-in
        plain = row[3] if row[3] is not None else "<the candidate's default>"
        default = plain if row[2] is True else inspect.Parameter.empty
        parameters.append(inspect.Parameter(str(row[0]), kind, default=default))
    return inspect.Signature(parameters)


def _shared_memory(arguments: list[Any]) -> tuple[list[torch.Tensor], Any]:
    """Arguments that share the judge's memory (a tensor passed twice, a view of another)
    share it in the worker too: their memory goes once (`bases`), each as a view of it.
    Returns the bases and `ref(tensor)`: [-(base + 1), offset, shape, strides] or None."""
    groups: dict[int, list[torch.Tensor]] = {}
    for tensor in worker_facts.tensors_in(arguments):
        held = tensor.device.type == "meta" or not tensor.numel()
        if not held and worker_facts.reference(tensor) is None:
            groups.setdefault(int(tensor.untyped_storage().data_ptr()), []).append(tensor)
    bases: list[torch.Tensor] = []
    where: dict[int, tuple[int, int]] = {}  # id(tensor) -> (base, its first element there)
    for group in groups.values():
        if len(group) < 2 or len({t.dtype for t in group}) > 1:
            continue
        first = min(int(t.storage_offset()) for t in group)
        last = max(int(t.storage_offset()) + _span(t) for t in group)
        bases.append(group[0].detach().as_strided((last - first,), (1,), first))
        for tensor in group:
            where[id(tensor)] = (len(bases) - 1, int(tensor.storage_offset()) - first)

    def ref(tensor: torch.Tensor) -> list[Any] | None:
        if id(tensor) not in where:
            return None
        base, offset = where[id(tensor)]
        return [-(base + 1), offset, list(tensor.shape), list(tensor.stride())]

    return bases, ref


def _span(tensor: torch.Tensor) -> int:
    steps = zip(tensor.shape, tensor.stride(), strict=True)
    return 1 + sum((size - 1) * step for size, step in steps)


def _mirror(sent: list[Any], after: list[Any], blobs: list[bytes], worker: Worker) -> None:
    """Write what the call left in each tensor argument into the judge's own tensor (at
    any depth of its containers); the worker's copy's facts go with the judge's tensor."""
    worker_facts.new_call(worker)
    for original, data in zip(sent, after, strict=False):
        _mirror_data(original, data, blobs, worker)


def _mirror_data(original: Any, data: Any, blobs: list[bytes], worker: Worker) -> None:
    """One argument's answer, read where it names one of our tensors as unchanged (no
    bytes came: ours holds them), decoded and mirrored otherwise."""
    if data is None:
        return
    unchanged = wire.read_unchanged(data)
    if unchanged is not None:
        if isinstance(original, torch.Tensor):
            _adopt_unchanged(original, *unchanged, worker)
    elif isinstance(original, list | tuple | dict) and isinstance(data, dict) and "L" in data:
        items = original.values() if isinstance(original, dict) else original
        for item, item_data in zip(items, wire.items(data["L"]), strict=False):
            _mirror_data(item, item_data, blobs, worker)
    else:
        _mirror_one(original, worker.decode(data, blobs, returned=False))


def _adopt_unchanged(original: torch.Tensor, reported: dict[str, Any], nbytes: int,
                     worker: Worker) -> None:  # fmt: skip
    """The facts of the worker's copy of `original`, which the call left as it was: what
    `_mirror_one` records of a copy it had nothing to write from."""
    facts = worker_facts.of_report(reported, worker, worker.generation, original, returned=False)
    if worker_facts.reference(original) is None:
        worker_facts.adopt(original, facts)
    worker_facts.placed(original, facts, nbytes)


def _mirror_one(original: Any, value: Any) -> None:
    if isinstance(original, list | tuple | dict) and isinstance(value, list):
        items = original.values() if isinstance(original, dict) else original
        for item, item_value in zip(items, value, strict=False):
            if item_value is not None:
                _mirror_one(item, item_value)
    elif isinstance(original, torch.Tensor) and isinstance(value, torch.Tensor):
        by_reference = worker_facts.reference(original) is not None
        facts = worker_facts.facts_of(value)
        if original.device.type == "meta":
            if facts is not None and not by_reference:
                worker_facts.adopt(original, facts[0])
            return  # no data to write
        moved = facts is not None and facts[0].moved  # the worker's copy was reallocated
        # an inference tensor is written only under inference mode, here as in the worker
        writing = torch.inference_mode if original.is_inference() else torch.no_grad
        if moved or value.shape != original.shape or value.dtype != original.dtype:
            with writing():  # so is the judge's: its data pointer changes too
                original.set_(value.to(original.device).clone())  # type: ignore[call-overload]
        elif wire.copy_allocation(original, value):
            pass  # a guarded buffer: its whole allocation, guard regions included, came back
        elif not torch.equal(value.to(original.device), original.detach()):
            with writing():
                original.copy_(value)
            if by_reference:  # the worker's own memory, written there: still a faithful view
                worker_facts.written_by_worker(original)
        if facts is not None and not by_reference:  # what the worker's copy of it is (after
            worker_facts.adopt(original, facts[0])  # our write: the test has not written it)
        if facts is not None:
            worker_facts.placed(original, facts[0], value.untyped_storage().nbytes())
    elif isinstance(original, torch.Generator) and isinstance(value, torch.Generator):
        original.set_state(value.get_state())


class RemoteCallable:
    """A module-level object of the candidate's, named by its path: it survives a restart."""

    def __init__(self, worker: Worker, handle: int | None, name: str | None) -> None:
        self._worker, self._handle, self._name = worker, handle, name
        self.__name__ = (name or "object").rpartition(".")[2]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._worker, self._handle, self._name, args, kwargs)

    @property
    def __signature__(self) -> Any:
        """The candidate's signature, as the worker reads it (`oracles.assert_binds`)."""
        return _signature(self._worker, None, str(self._name))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or self._handle is not None or self._name is None:
            raise AttributeError(name)
        return _named(self._worker, f"{self._name}.{name}")  # a class's classmethod, say

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
        if (self._kind, name) in self._worker.methods:  # known a method: no round trip
            return _Method(self, name)
        fields = self.__dict__.get("_fields")
        if fields is not None and fields[0] == self._worker.exchanges and name in fields[1]:
            return fields[1][name]
        reply = self._worker.request({"op": "getattr", "handle": self._ident, "name": name}, [])
        value = self._worker.decode(reply["value"], reply.pop("_blobs"))
        if isinstance(value, RemoteObject) and reply.get("method") is True:
            self._worker.methods.add((self._kind, name))  # the worker's bound method: later
        return value  # reads of the name skip a round trip (`_Method`)

    def _remember_fields(self, fields: dict[str, Any]) -> None:
        """The dataclass fields the worker sent with this object (a model's output): read
        from here until the worker next runs code (then they may have changed)."""
        object.__setattr__(self, "_fields", (self._worker.exchanges, fields))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):  # the proxy's own
            object.__setattr__(self, name, value)
            return
        self._live()
        self._worker.methods.discard((self._kind, name))  # read it again from now on
        serial = worker_facts.serial_of(value, self._worker)
        if serial is not None:  # the worker's own tensor (a parameter the test wrote into)
            message = {"op": "setattr", "handle": self._ident, "name": name, "serial": serial}
            self._worker.request(message, [])
        else:
            self._protocol("__setattr__", name, value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("_"):
            object.__delattr__(self, name)
            return
        self._live()
        self._worker.methods.discard((self._kind, name))
        self._protocol("__delattr__", name)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self._protocol("__deepcopy__")

    def __copy__(self) -> Any:
        return self._protocol("__copy__")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._live()
        return _call(self._worker, self._ident, None, args, kwargs)

    # Python's protocols run in the worker: a generator stepped there, a module list indexed
    def __iter__(self) -> Any:
        return self._protocol("__iter__")

    def __next__(self) -> Any:
        return self._protocol("__next__")

    def __len__(self) -> int:
        return int(self._protocol("__len__"))

    def __bool__(self) -> bool:
        return bool(self._protocol("__bool__"))

    def __getitem__(self, key: Any) -> Any:
        return self._protocol("__getitem__", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._protocol("__setitem__", key, value)

    def _protocol(self, name: str, *args: Any) -> Any:
        self._live()
        return _call(self._worker, self._ident, name, args, {})

    def _isinstance(self, cls: type) -> bool:
        """isinstance(the worker's object, cls) for a torch class (worker-reported)."""
        self._live()
        path = f"{cls.__module__}.{cls.__qualname__}"
        for alias in ("torch.nn.modules.module.Module", "torch.nn.Module"):
            path = "torch.nn.Module" if path == alias else path
        reply = self._worker.request({"op": "isa", "handle": self._ident, "cls": path}, [])
        return reply["value"] is True

    def _worker_state(self) -> Any:
        """Everything the object holds, dumped by the worker: what `state_fingerprint` reads."""
        self._live()
        reply = self._worker.request({"op": "state", "handle": self._ident}, [])
        return self._worker.decode(reply["value"], reply.pop("_blobs"))

    def __repr__(self) -> str:
        return f"<candidate {self._kind} (in the worker)>"


def _remote_object(
    kind: type[RemoteObject], worker: Worker, ident: int, name: str, generation: int
) -> RemoteObject:
    """An instance of `kind` (RemoteObject or a class's stand-in type) that is not built
    by calling the type (a stand-in type's call builds a new object in the worker)."""
    value = object.__new__(kind)
    RemoteObject.__init__(value, worker, ident, name, generation)
    return value


class RemoteClass(type):
    """The judge's stand-in for a class of the candidate's module, a type of its own: a
    call builds an instance in the worker, whose handle is an instance of this type;
    isinstance asks the worker (worker-reported); a dataclass shows its fields (so
    `dataclasses.fields`, `replace`, `asdict` and `astuple` work on its instances)."""

    _worker: Worker
    _path: str

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _call(cls._worker, None, cls._path, args, kwargs)

    def __instancecheck__(cls, value: Any) -> bool:
        if not isinstance(value, RemoteObject) or value._worker is not cls._worker:
            return False
        if type(value) is cls:  # the worker named this very class as its type
            return True
        value._live()
        message = {"op": "isa", "handle": value._ident, "cls": cls._path}
        return cls._worker.request(message, [])["value"] is True

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _named(cls._worker, f"{cls._path}.{name}")  # a classmethod, a class attribute

    @property
    def __signature__(cls) -> Any:
        return _signature(cls._worker, None, cls._path)

    def __repr__(cls) -> str:
        return f"<candidate class {cls._path} (in the worker)>"


def _remote_class(worker: Worker, name: str, facts: dict[str, Any]) -> RemoteClass:
    namespace: dict[str, Any] = {"_worker": worker, "_path": name, "__module__": "candidate"}
    rows = facts.get("fields")
    if isinstance(rows, list) and len(rows) <= 256:
        namespace.update(_dataclass_namespace(name, rows, facts.get("frozen") is True))
    return RemoteClass(name, (RemoteObject,), namespace)


def _dataclass_namespace(name: str, rows: list[Any], frozen: bool) -> dict[str, Any]:
    """The dataclass machinery of a stand-in type: its fields as the worker reported
    them (a plain default as itself) and equality and hashing asked of the worker."""
    import dataclasses

    fields = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 4 or not str(row[0]).isidentifier():
            raise wire.WireError("malformed dataclass field")
        field_name, init, known, default = row
        if not isinstance(default, bool | int | float | str | None):
            raise wire.WireError("malformed dataclass field")
        spec = dataclasses.field(init=init is True)
        if known is True:
            spec = dataclasses.field(init=init is True, default=default)
        fields.append((str(field_name), Any, spec))
    shape = dataclasses.make_dataclass(name, fields, frozen=frozen, kw_only=True)

    def __eq__(self: RemoteObject, other: Any) -> Any:  # noqa: N807
        if not isinstance(other, RemoteObject) or other._worker is not self._worker:
            return NotImplemented
        return bool(self._protocol("__eq__", other))

    def __hash__(self: RemoteObject) -> int:  # noqa: N807
        return int(self._protocol("__hash__"))

    return {
        "__dataclass_fields__": shape.__dataclass_fields__,  # type: ignore[attr-defined]
        "__dataclass_params__": shape.__dataclass_params__,  # type: ignore[attr-defined]
        "__eq__": __eq__,
        "__hash__": __hash__,
    }


class _Method:
    """`obj.name` for a name the worker reported as a method of obj's class: called in the
    worker as that class's method bound to obj (half the round trips); an assignment to
    `obj.name` through the judge makes the name an attribute again (`__setattr__`)."""

    def __init__(self, owner: RemoteObject, name: str) -> None:
        self._owner, self._name = owner, name
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._owner._live()
        method = f"{wire.CLASS_METHOD}{self._name}"
        return _call(self._owner._worker, self._owner._ident, method, args, kwargs)

    @property
    def __signature__(self) -> Any:
        return _signature(self._owner._worker, self._owner._ident, self._name)

    def __repr__(self) -> str:
        return f"<candidate method {self._owner._kind}.{self._name} (in the worker)>"


class RemoteModule:
    """What `candidate(VARIABLE)` returns in judge mode: the candidate module, by proxy."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self.__file__ = worker.file
        self.__name__ = f"candidate:{worker.variable}"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name not in self._worker.names:
            raise AttributeError(f"the candidate module has no attribute {name!r}")
        return _named(self._worker, name)


class WorkerTorch:
    """A torch module as the candidate's worker holds it (a distributed suite's jobs call
    `torch.distributed` where the candidate's collectives run): each attribute is asked
    there, so a function comes back as a handle and what it returns as a value or one."""

    def __init__(self, worker: Worker, name: str) -> None:
        self._worker, self._name = worker, name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        message = {"op": "getattr", "handle": None, "module": self._name, "name": name}
        reply = self._worker.request(message, [])
        return self._worker.decode(reply["value"], reply.pop("_blobs"))

    def __repr__(self) -> str:
        return f"<{self._name} in the candidate's worker>"


def _named(worker: Worker, path: str) -> Any:
    """The candidate module's attribute at `path` ("name", "Class.name"): a value, the
    stand-in type of one of its classes, or any other object named by its path (which
    survives a restart)."""
    reply = worker.request({"op": "getattr", "handle": None, "name": path}, [])
    value = worker.decode(reply["value"], reply.pop("_blobs"))
    if not isinstance(value, RemoteObject):
        return value
    facts = reply.get("class")
    proxy = worker.class_named(path, facts) if isinstance(facts, dict) else None
    return proxy if proxy is not None else RemoteCallable(worker, None, path)


_WORKERS: list[Worker] = []


def end_workers() -> None:
    """Before this process writes any result: every worker and all it started are ended
    (a setsid or double-forked child of a worker comes to this process, a subreaper)."""
    if not _WORKERS:
        return
    for worker in _WORKERS:
        worker.stop()
    reaper.end_tree()


def _new_worker(variable: str, spec: str, *, start: bool = True) -> Worker:
    """A worker for this candidate file: its interpreter started (`start`), or none yet
    (it will be forked from a shared one: `spawn_early`)."""
    if not _WORKERS:
        reaper.become_subreaper()
    timeout = float(os.environ.get("GPTLAB_JUDGE_TIMEOUT", "60"))
    memory = int(os.environ.get("GPTLAB_JUDGE_MEMORY_MIB", "4096"))
    worker = Worker(variable, Path(os.path.abspath(spec)), timeout, memory)  # a link: kept
    _WORKERS.append(worker)
    if start:
        worker.spawn()
    return worker


_SPAWNED: dict[tuple[str, str], Worker] = {}


def _starts_alike(variable: str, spec: str) -> tuple[Any, ...]:
    """What a worker's start depends on besides its scratch folder: the modules it refuses,
    its import roots and the submission's folder it may read (a seed-style folder's modules
    that share their siblings start alike)."""
    folder = str(Path(os.path.abspath(spec)).parent)
    alike = (
        refused_modules(variable),
        tuple(site_dirs(variable)),
        folder,
        variable in LOOPBACK_VARIABLES,
    )
    return (*alike, distributions(variable), tuple(sorted(worker_environment(variable).items())))


def spawn_early(judged: list[tuple[str, str]]) -> None:
    """Start the workers' interpreters now, before the tests are collected: their second of
    importing torch overlaps the judge's own imports (`remote_module` loads each later).
    Candidates whose workers start alike share one interpreter that never loads a
    candidate: each worker is a fork of it (`Worker._fork`), made as its file is loaded,
    so a six-module folder starts three interpreters, not six."""
    if sandbox.refusal() is not None and not sandbox.unsandboxed_allowed():
        return  # no worker can start: each candidate's load says why (`remote_module`)
    groups: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
    for variable, spec in judged:
        if (variable, spec) not in _SPAWNED:
            groups.setdefault(_starts_alike(variable, spec), []).append((variable, spec))
    for members in groups.values():
        if len(members) == 1:
            _SPAWNED[members[0]] = _new_worker(*members[0])
            continue
        shared = _new_worker(*members[0])  # never loaded: a zygote of candidates' workers
        assert shared.process is not None and shared.scratch is not None
        for variable, spec in members:
            worker = _new_worker(variable, spec, start=False)
            worker.zygote = (shared.fd_in, shared.fd_out, shared.process.pid, shared.scratch)
            worker.scratch = shared.scratch
            _SPAWNED[(variable, spec)] = worker


def remote_module(variable: str, spec: str) -> RemoteModule:
    """The worker for this candidate file, with the file loaded; ImportError when it
    cannot be imported."""
    worker = _SPAWNED.pop((variable, spec), None)
    if worker is None or (worker.process is None and worker.zygote is None):
        worker = _new_worker(variable, spec)
    worker.load()
    return RemoteModule(worker)


def _autocast_state() -> dict[str, str]:
    """The judge's enabled autocast regions: device type -> dtype name ("cpu": "bfloat16")."""
    return {
        kind: str(torch.get_autocast_dtype(kind)).removeprefix("torch.")
        for kind in ("cpu", "cuda")
        if torch.is_autocast_enabled(kind)
    }
