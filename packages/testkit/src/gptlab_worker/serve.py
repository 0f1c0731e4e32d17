"""The worker's loop: run the candidate's code, and nothing else, for the judge.

Started by the judge (`gptlab_testkit.judge.client.Worker`) as `python -I -S -B
<a copy of this folder> FD_IN FD_OUT REFUSED SITE_DIR...` (`__main__`): no site-packages but
the directories given (where torch lives), no `.pth` file (so no editable install of this
project), no user site, no environment. It imports neither the testkit, pytest, the
tests nor the reference: `Refuser`, on `sys.meta_path` right after the submission's own files (a
seed-style folder's `kv_cache.py` is its own code), refuses the project's packages and
the test tools, and records each attempt (the judge fails the test that made it, naming
it).

The candidate's files come over the pipe as source (the worker needs no access to the
submission's folder) and are imported from memory: a file answers the plain name of its
stem, `name_attempt.py` also `name`. The judge then sends calls; each answer carries
the result (by value, or a handle for an object that stays here), every tensor and
generator argument (at any depth of its containers) as it is after the call (so the
judge sees in-place writes), what a forbidden-call guard saw, and the refused imports.
Messages: see `wire`.

Every tensor sent to the judge carries its facts (`Sent`): a serial naming the object,
its data pointers, offset and strides. `Sent` keeps the last tensors it sent alive, so a
serial always names one object and no pointer the judge holds is reused by a later
allocation; the judge sends a view of such a tensor back by reference, reads a view's
current values (`read`) and fingerprints an object's whole state (`state`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

Reply = tuple[dict[str, Any], list[bytes]]


class Refuser(importlib.abc.MetaPathFinder):
    """Refuses the modules a candidate may not use; remembers who asked for what."""

    def __init__(self, refused: list[str]) -> None:
        self.refused = tuple(refused)
        self.attempts: list[str] = []

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        top = fullname.partition(".")[0]
        if top in self.refused or top.startswith("__editable__"):
            if _asked_by_torch():  # torch looking for an optional library (dynamo's skip
                # list names hypothesis): it reads as absent, and is not the candidate's try
                return importlib.machinery.ModuleSpec(fullname, _Absent(), origin=None)
            self.attempts.append(fullname)
            raise ImportError(
                f"{fullname} is out of the candidate's reach (graded code may not use it)"
            )
        return None


class _Absent(importlib.abc.Loader):
    """The loader of a refused module torch asked about: importing it fails."""

    def create_module(self, spec: Any) -> None:
        raise ImportError(f"{spec.name} is not available to graded code")

    def exec_module(self, module: Any) -> None:
        raise ImportError(f"{module.__name__} is not available to graded code")


def _asked_by_torch() -> bool:
    """Is the import being refused asked for by torch's own code (the nearest frame outside
    the import machinery lies in torch's package)?"""
    torch = sys.modules.get("torch")
    home = os.path.dirname(str(getattr(torch, "__file__", "") or "")) if torch else ""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<frozen") and name != __file__:
            return bool(home) and name.startswith(home + os.sep)
        frame = frame.f_back  # type: ignore[assignment]
    return False


class Sources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The submission's files, imported from the source the judge sent, and the seed's
    lab names that stand for a reference the candidate may use (`seeds`: a seed-style
    `cache_aware_lm.py` alone begins `from tiny_gpt import ...`, and tinygpt is its
    dependency): a module of that name holding the package's public names and aliases."""

    def __init__(self, files: dict[str, list[str]], seeds: dict[str, Any]) -> None:
        self.files = files  # plain name -> [path, source]
        self.seeds = seeds  # seed name -> [package, {alias: "module:attribute"}]

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname in self.files:
            origin = self.files[fullname][0]
            return importlib.util.spec_from_loader(fullname, self, origin=origin)
        if fullname in self.seeds:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        if module.__name__ in self.seeds:
            package_name, aliases = self.seeds[module.__name__]
            package = importlib.import_module(str(package_name))  # meets the refuser
            public = getattr(package, "__all__", None) or dir(package)
            for name in (n for n in public if not n.startswith("_")):
                setattr(module, name, getattr(package, name))
            for alias, target in dict(aliases).items():
                owner, _, attribute = str(target).partition(":")
                setattr(module, alias, getattr(importlib.import_module(owner), attribute))
            return
        origin, source = self.files[module.__name__]
        module.__file__ = origin
        exec(compile(source, origin, "exec"), module.__dict__)


class Forbidden:
    """A TorchFunctionMode built lazily (torch is imported after the refuser is in place)."""

    @staticmethod
    def mode(names: list[str], wire: Any) -> Any:
        import torch
        from torch.overrides import TorchFunctionMode

        def resolve(name: str) -> Any:
            owner: Any = torch
            for part in name.split("."):
                owner = getattr(owner, part)
            return owner

        forbidden = {resolve(name): name for name in names}

        class Mode(TorchFunctionMode):
            """What the judge's guards ask of a call: the forbidden calls seen, how many
            torch calls were made, the most elements one returned in a tensor."""

            def __init__(self) -> None:
                super().__init__()
                self.seen: list[str] = []
                self.calls = 0
                self.largest = 0

            def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                self.calls += 1
                if func in forbidden:
                    self.seen.append(forbidden[func])
                result = func(*args, **(kwargs or {}))
                self.largest = max(self.largest, wire.largest_tensor(result))
                return result

        mode = Mode()
        return mode


class Kept:
    """The lists and dicts calls returned, kept alive (their serial names the object: a
    candidate that hands out one report object again is seen to, `worker_facts.identity`)."""

    KEEP = 4096

    def __init__(self) -> None:
        self.objects: OrderedDict[int, tuple[Any, int]] = OrderedDict()  # id -> (obj, serial)
        self.next = 0

    def serial(self, value: Any) -> int:
        known = self.objects.get(id(value))
        if known is not None and known[0] is value:
            self.objects.move_to_end(id(value))
            return known[1]
        self.next += 1
        self.objects[id(value)] = (value, self.next)
        while len(self.objects) > self.KEEP:
            self.objects.popitem(last=False)
        return self.next


class Sent:
    """The tensors sent to the judge (and received from it), kept alive, by serial."""

    KEEP = 16384  # tensors, and at most KEEP_BYTES of their storage; the oldest go first
    KEEP_BYTES = 256 * 1024 * 1024

    def __init__(self) -> None:
        self.serials: dict[int, tuple[Any, int]] = {}  # id -> (tensor, serial)
        self.tensors: OrderedDict[int, Any] = OrderedDict()  # serial -> tensor
        self.next = 0
        self.bytes = 0

    def serial(self, tensor: Any) -> int:
        known = self.serials.get(id(tensor))
        if known is not None and known[0] is tensor:
            return known[1]
        self.next += 1
        self.serials[id(tensor)] = (tensor, self.next)
        self.tensors[self.next] = tensor
        self.bytes += _nbytes(tensor)
        while len(self.tensors) > self.KEEP or self.bytes > self.KEEP_BYTES:
            _, old = self.tensors.popitem(last=False)
            self.serials.pop(id(old), None)
            self.bytes -= _nbytes(old)
        return self.next

    def facts(self, tensor: Any) -> dict[str, Any]:
        meta = tensor.device.type == "meta"
        storage = None if meta else tensor.untyped_storage()
        return {
            "id": self.serial(tensor),
            "ptr": 0 if meta else int(tensor.data_ptr()),
            "base": 0 if storage is None else int(storage.data_ptr()),
            "nbytes": 0 if storage is None else int(storage.nbytes()),
            "off": int(tensor.storage_offset()),
            "stride": [int(s) for s in tensor.stride()],
            "contig": int(tensor.is_contiguous()),
        }

    def view(self, ref: list[Any]) -> Any:
        """The view the judge took of a tensor it was sent: same memory, here."""
        serial, offset, shape, stride = ref
        if serial not in self.tensors:
            raise ValueError("a tensor sent by reference is no longer held by the worker")
        base = self.tensors[serial]
        return base.as_strided(shape, stride, int(base.storage_offset()) + offset)


class JudgeObject:
    """An object the judge lent the candidate (a reference model, a test's recorder, a
    callable): it stays in the judge; its attributes, calls, items and length are asked of
    the judge and come back by value (or as another lent object). The judge refuses names
    that start with "_" and the calls that would change a model it lent."""

    __slots__ = ("_ident", "_kind", "_server")

    def __init__(self, server: Server, ident: int, kind: str) -> None:
        self._server, self._ident, self._kind = server, ident, kind

    def _ask(self, do: str, name: str | None = None, args: Any = (), kwargs: Any = None) -> Any:
        request = {"do": do, "j": self._ident, "name": name}
        return self._server.callback(request, list(args), dict(kwargs or {}))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"{name}: the grader's objects show only their public names")
        return self._ask("getattr", name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._ask("call", None, args, kwargs)

    def __iter__(self) -> Any:
        return iter(self._ask("list"))

    def __next__(self) -> Any:
        return self._ask("next")

    def __len__(self) -> int:
        return int(self._ask("len"))

    def __bool__(self) -> bool:
        return bool(self._ask("bool"))

    def __getitem__(self, key: Any) -> Any:
        return self._ask("getitem", None, (key,))

    def __enter__(self) -> Any:
        return self._ask("call", "__enter__")

    def __exit__(self, *exc: Any) -> Any:
        return self._ask("call", "__exit__", (None, None, None))

    def __repr__(self) -> str:
        return f"<{self._kind} lent by the grader>"


_LENT_KINDS: dict[str, type] = {}
_LENT_MODULE: list[type] = []  # the nn.Module stand-in's class, made once torch is imported
# The module methods that walk a lent module: each asks the judge, and yields what it gives.
_WALKS = ("modules", "named_modules", "children", "named_children", "parameters",
          "named_parameters", "buffers", "named_buffers")  # fmt: skip


def _lent_module(server: Server, ident: int, kind: str) -> Any:
    """A module the judge lent, as an nn.Module here (a candidate may check isinstance, as
    P17's probe does): its calls, mode flag, walks and attributes are the judge's, asked as
    for any lent object; `train`/`eval`/`training = ...` are the judge's to allow or refuse."""
    if not _LENT_MODULE:
        import torch

        class LentModule(torch.nn.Module):
            # nn.Module.__init__ is not run: the module's state is the judge's, not ours.
            def __init__(self, lent: JudgeObject) -> None:
                object.__setattr__(self, "_lent", lent)

            def __getattribute__(self, name: str) -> Any:
                # nn.Module's own methods (`to`, `load_state_dict`, ...) would act on this
                # empty stand-in: every public name not defined here is the judge's
                if not name.startswith("_") and name not in LentModule.__dict__:
                    return getattr(object.__getattribute__(self, "_lent"), name)
                return object.__getattribute__(self, name)

            def __getattr__(self, name: str) -> Any:
                return getattr(object.__getattribute__(self, "_lent"), name)

            def __setattr__(self, name: str, value: Any) -> None:
                object.__getattribute__(self, "_lent")._ask("setattr", name, (value,))

            def __call__(self, *args: Any, **kwargs: Any) -> Any:
                return self._lent(*args, **kwargs)

            def train(self, mode: bool = True) -> Any:
                self._lent._ask("call", "train", (mode,))
                return self

            def eval(self) -> Any:
                self._lent._ask("call", "eval")
                return self

            def __iter__(self) -> Any:
                return iter(self._lent)

            def __len__(self) -> int:
                return len(self._lent)

            def __getitem__(self, key: Any) -> Any:
                return self._lent[key]

            def __repr__(self) -> str:
                return repr(self._lent)

        for walk in _WALKS:
            setattr(LentModule, walk, _walker(walk))
        _LENT_MODULE.append(LentModule)
    return _LENT_MODULE[0](_lent(server, ident, kind))


_THROUGH_JUDGE: list[Any] = []


def _through_judge(server: Server, graph: int, value: Any) -> Any:
    """`value`, an output of a test's own module (run in the judge), as a tensor whose
    backward goes on in the judge, into that module's parameters (`lending`)."""
    if not _THROUGH_JUDGE:
        import torch

        class ThroughJudge(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, copy: Any, owner: Any, ident: int) -> Any:
                ctx.owner, ctx.ident = owner, ident
                return copy.detach().clone()

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                ctx.owner.callback({"do": "backward", "j": ctx.ident}, [grad], {})
                return None, None, None

        _THROUGH_JUDGE.append(ThroughJudge)
    return _THROUGH_JUDGE[0].apply(value, server, graph)


def _walker(name: str) -> Any:
    def walk(self: Any, *args: Any, **kwargs: Any) -> Any:
        return iter(self._lent._ask("call", name, args, kwargs))

    walk.__name__ = name
    return walk


def _lent(server: Server, ident: int, kind: str) -> JudgeObject:
    """A JudgeObject whose type is named like the judge's (so a message naming the type of
    a value reads the same as in-process)."""
    kind = kind.rpartition(".")[2] or "object"
    if kind not in _LENT_KINDS:
        _LENT_KINDS[kind] = type(kind, (JudgeObject,), {"__slots__": ()})
    return _LENT_KINDS[kind](server, ident, kind)  # type: ignore[no-any-return]


KEYS_OF_A_JOIN = ("rank", "world", "port", "timeout_s")


class CallRaisedError(Exception):
    """The candidate's exception from a call, with what the call left in its tensor
    arguments: a check that ran after a write (a rejection too late) shows in the judge."""

    def __init__(self, error: Exception, after: list[Any], out: list[bytes]) -> None:
        super().__init__(str(error))
        self.error, self.after, self.out = error, after, out


FRAMES_SENT = 4  # the innermost frames of the submission's own files a raise reports


def submission_frames(error: BaseException, lines: dict[str, list[str]]) -> list[list[Any]]:
    """Where the candidate's exception passed through the submission's own files, innermost
    last: [file name, line, function, source line] each. Only the traceback's frames are
    walked and only those frames' lines read (formatting a whole traceback is what a probing
    `getattr(model, name, None)` must not pay). Shown to the learner, never scored."""
    frames: list[list[Any]] = []
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        source = lines.get(code.co_filename)
        if source is not None:
            line = source[tb.tb_lineno - 1].strip() if 0 < tb.tb_lineno <= len(source) else ""
            frames.append([os.path.basename(code.co_filename), tb.tb_lineno, code.co_name, line])
        tb = tb.tb_next
    return frames[-FRAMES_SENT:]


class Server:
    def __init__(self, wire: Any, refuser: Refuser, fd_in: int, fd_out: int) -> None:
        self.wire, self.refuser = wire, refuser
        self.fd_in, self.fd_out = fd_in, fd_out
        self.objects: dict[int, Any] = {}
        self.module: Any = None
        self.sent = Sent()
        self.kept = Kept()
        self.functions: dict[tuple[Any, str], Any] = {}  # the test's, by (identity, source)
        self.rank: Any = None  # a distributed suite's rank: its collectives' recorder
        self.lines: dict[str, list[str]] = {}  # the submission's files by their copy's path

    def handle_of(self, value: Any) -> dict[str, Any]:
        if _LENT_MODULE and isinstance(value, _LENT_MODULE[0]):
            value = object.__getattribute__(value, "_lent")
        if isinstance(value, JudgeObject):  # the judge's own object, going home
            return {"j": value._ident, "kind": value._kind}
        self.objects[id(value)] = value
        if self._of_module(type(value)):  # a class of the candidate's module: the judge's
            return {"h": id(value), "kind": type(value).__name__, "cls": 1}  # proxy type
        return {"h": id(value), "kind": type(value).__qualname__}

    def lent(self, data: dict[str, Any]) -> Any:
        if "p" in data:  # one of the candidate module's names, sent back by the judge
            return _attribute(self.module, str(data["p"]))
        if "src" in data:
            return self.shipped(data["src"])
        ident = data["j"]
        if not isinstance(ident, int):
            raise self.wire.WireError("malformed lent object")
        if data.get("module") == 1:
            return _lent_module(self, ident, str(data.get("kind", "object")))
        return _lent(self, ident, str(data.get("kind", "object")))

    def shipped(self, data: Any) -> Any:
        """A pure function of the test's, from its source (judge side: `shipping`): defined
        once per function the judge holds, with only the modules it names as globals."""
        if not isinstance(data, list) or len(data) != 4:
            raise self.wire.WireError("malformed function")
        ident, source, name, modules = data
        if not isinstance(source, str) or not isinstance(name, str) or not name.isidentifier():
            raise self.wire.WireError("malformed function")
        if not isinstance(modules, dict):
            raise self.wire.WireError("malformed function")
        key = (ident, source)
        if key not in self.functions:
            import builtins
            import importlib

            namespace: dict[str, Any] = {"__builtins__": builtins, "__name__": "test_functions"}
            for alias, module in modules.items():
                namespace[str(alias)] = importlib.import_module(str(module))
            exec(compile(source, f"<test function {name}>", "exec"), namespace)
            self.functions[key] = namespace[name]
        return self.functions[key]

    def value(self, data: Any, blobs: list[bytes], view: Any = None) -> Any:
        return self.wire.decode(
            data,
            blobs,
            lambda ident, kind, cls: self.objects[ident],
            view=view or self.sent.view,
            lent=self.lent,
        )

    def callback(self, request: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Ask the judge about an object it lent; while it answers, its code may call our
        objects (a reference model appending to the candidate's cache): those requests are
        served here, in order."""
        import torch

        out: list[bytes] = []
        message = {
            "op": "callback",
            **request,
            "args": self.encode(args, out),
            "kwargs": self.encode(kwargs, out),
            "grad": torch.is_grad_enabled(),
            "inference": torch.is_inference_mode_enabled(),
        }
        self.wire.send(self.fd_out, message, out)
        while True:
            reply, blobs = self.wire.receive(self.fd_in)
            if "cb" in reply:
                break
            self.serve_one(reply, blobs)
        if "raised" in reply:
            name, text = (str(part) for part in reply["raised"][:2])
            raise self.wire.ERRORS.get(name, RuntimeError)(text)
        sent = [*args, *kwargs.values()]
        for original, data in zip(sent, reply.get("after") or [], strict=False):
            if data is not None:
                _write_back(original, self.value(data, blobs))
        value = self.value(reply["value"], blobs)
        graph = reply.get("graph")
        if isinstance(graph, int) and isinstance(value, torch.Tensor) and value.requires_grad:
            value = _through_judge(self, graph, value)
        return value

    def encode(self, value: Any, out: list[bytes], handles: bool = True) -> Any:
        return self.wire.encode(
            value, out, self.handle_of if handles else None, facts=self.sent.facts
        )

    def answer(self, message: dict[str, Any], blobs: list[bytes] | None = None) -> None:
        message["refused"] = list(self.refuser.attempts)
        self.refuser.attempts.clear()
        self.wire.send(self.fd_out, message, blobs or [])

    def serve(self) -> None:
        while True:
            self.serve_one(*self.wire.receive(self.fd_in))

    def serve_one(self, message: dict[str, Any], blobs: list[bytes]) -> None:
        import torch

        if "rng" in message:  # the judge's random state: one stream, as in one process
            torch.set_rng_state(self.wire.decode(message["rng"], blobs))
        before = torch.get_rng_state()
        try:
            reply, out = self.dispatch(message, blobs)
        except self.wire.WireError:
            raise
        except CallRaisedError as raised:  # the judge mirrors the arguments, then raises
            error = raised.error
            reply = {"raised": [type(error).__name__, str(error)[:2000]], "after": raised.after}
            reply["where"] = submission_frames(error, self.lines)
            out = raised.out
        except BaseException as error:  # the candidate's exception, reported by name and
            # text, and where it passed through the submission's files (never the whole
            # traceback: see `submission_frames`)
            reply, out = {"raised": [type(error).__name__, str(error)[:2000]]}, []
            reply["where"] = submission_frames(error, self.lines)
        after = torch.get_rng_state()
        if not torch.equal(before, after):  # the candidate drew: the judge's stream moves on
            reply["rng"] = self.wire.encode(after, out)
        self.answer(reply, out)

    def dispatch(
        self, message: dict[str, Any], blobs: list[bytes]
    ) -> tuple[dict[str, Any], list[bytes]]:
        op = message.get("op")
        if op == "load":
            return self.load(message)
        if op == "fork":
            return self.fork(message)
        self.write_through(message.get("writes") or [], blobs)
        self.backward(message.get("grads") or [], blobs)
        out: list[bytes] = []
        if op == "read":  # a view's current values
            return {"value": self.encode(self.sent.view(message["ref"]), out)}, out
        if op == "join":  # a distributed suite's rank: this worker joins its Gloo group
            return self.join(message), out
        if op == "unwaited":  # the rank's handles not waited on since the last ask
            return {"value": self.encode(self.rank.take()[1], out)}, out
        owner = self._owner(message)
        if op == "getattr":
            value = _attribute(owner, message["name"])
            # a method of the object's class: the judge may call it later without asking
            method = getattr(value, "__self__", None) is owner and callable(value)
            reply = {"value": self.encode(value, out), "method": method}
            if isinstance(value, type):  # the judge makes a class a type of its own
                reply["class"] = _class_facts(value)
            return reply, out
        if op == "setattr":  # the test assigns one of our own tensors (a parameter it wrote)
            tensor = self.sent.tensors.get(int(message["serial"]))
            if tensor is None:
                raise ValueError("a tensor the worker no longer holds")
            setattr(owner, str(message["name"]), tensor)
            return {"value": None}, out
        if op == "call":
            return self.call(owner, message, blobs)
        if op == "vjp":  # the test's backward through one of our calls
            return {"value": self.wire.encode(self.vjp(message, blobs), out)}, out
        if op == "state":
            return {"value": self.encode(plain_state(owner), out, handles=False)}, out
        if op == "isa":  # isinstance(owner, torch.X or a class of the candidate's module)
            path = str(message["cls"])
            cls = _torch_class(path) if path.startswith("torch.") else self._class(path)
            return {"value": isinstance(owner, cls)}, out
        if op == "signature":
            return {"value": _parameters(_attribute(owner, str(message["name"])))}, out
        raise ValueError(f"unknown request {op!r}")

    def _owner(self, message: dict[str, Any]) -> Any:
        """What a request names: one of our objects, a torch module (a distributed
        suite's jobs call torch.distributed where the candidate runs), or the candidate's
        module."""
        if message.get("handle") is not None:
            return self.objects[message["handle"]]
        module = message.get("module")
        if module is None:
            return self.module
        if not isinstance(module, str) or module.partition(".")[0] != "torch":
            raise ValueError(f"a module of torch's, not {module!r}")
        return importlib.import_module(module)

    def join(self, message: dict[str, Any]) -> dict[str, Any]:
        """Record the collectives from now on and join rank `rank` of `world` (the
        rendezvous: a TCP store on loopback at `port`; Gloo's deadline: `timeout_s`)."""
        rank, world, port, timeout_s = (message.get(key) for key in KEYS_OF_A_JOIN)
        if type(rank) is not int or type(world) is not int or type(port) is not int:
            raise ValueError("malformed join")
        if not isinstance(timeout_s, int | float):
            raise ValueError("malformed join")

        def entered(name: str, tensors: str) -> None:  # said before the collective starts:
            # a rank that then hangs or dies has told the judge where
            self.wire.send(self.fd_out, {"op": "entered", "call": [name, tensors]}, [])

        from gptlab_worker import collectives  # torch.distributed: only a rank needs it

        self.rank = collectives.join(rank, world, port, float(timeout_s), entered)
        return {"value": None}

    def _class(self, name: str) -> type:
        value = _attribute(self.module, name)
        if not isinstance(value, type):
            raise TypeError(f"{name} is not a class")
        return value

    def backward(self, grads: list[Any], blobs: list[bytes]) -> None:
        """The gradient the test's backward left on its copy of one of our tensors,
        carried on through ours: in one process the test's backward would have gone on
        into the candidate's graph (its parameters' .grad). `grads`: [serial, gradient]."""
        import torch

        pairs = [(self.sent.tensors.get(serial), self.value(data, blobs)) for serial, data in grads]
        pairs = [
            (t, g) for t, g in pairs if t is not None and t.requires_grad and g.shape == t.shape
        ]
        if pairs:
            with torch.enable_grad():
                tensors, gradients = zip(*pairs, strict=True)
                torch.autograd.backward(list(tensors), list(gradients), retain_graph=True)

    def vjp(self, message: dict[str, Any], blobs: list[bytes]) -> list[Any]:
        """Our backward from the gradients of a call's outputs (`backward`), returning the
        gradients that our copies of its tensor inputs received."""
        inputs = [self.sent.tensors.get(serial) for serial in message.get("inputs") or []]
        kept = [None if t is None else t.grad for t in inputs]
        for tensor in inputs:
            if tensor is not None:
                tensor.grad = None
        self.backward(message.get("outputs") or [], blobs)
        found = [None if t is None else t.grad for t in inputs]
        for tensor, grad in zip(inputs, kept, strict=True):
            if tensor is not None:
                tensor.grad = grad
        return found

    def fork(self, message: dict[str, Any]) -> Reply:
        """A copy of this worker, candidate imported, for a forked test process: it talks
        over the two FIFOs named (read, write) and starts a session of its own."""
        import signal

        import torch

        if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]  # a fork: no CUDA
            raise RuntimeError("no fork once CUDA is initialised")
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped as they end
        reading, writing = (str(path) for path in message["fifos"])
        pid = os.fork()
        if pid:
            return {"pid": pid}, []
        try:  # the copy: never returns to the caller's loop
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.setsid()
            os.close(self.fd_in)
            os.close(self.fd_out)
            self.fd_in = os.open(reading, os.O_RDONLY)
            self.fd_out = os.open(writing, os.O_WRONLY)
            os.write(self.fd_out, b"!")  # connected
            self.serve()
        finally:
            os._exit(0)

    def load(self, message: dict[str, Any]) -> Reply:
        # First: a submission's own file named like a refused module (a seed-style folder's
        # kv_cache.py) is its own code; every other name still meets the refuser.
        sys.meta_path.insert(0, Sources(message["files"], message.get("seeds") or {}))
        self.lines = {
            str(path): str(source).splitlines() for path, source in message["files"].values()
        }
        self.module = importlib.import_module(message["main"])
        names = sorted(name for name in dir(self.module) if not name.startswith("__"))
        return {"names": names, "file": getattr(self.module, "__file__", "")}, []

    def call(
        self, owner: Any, message: dict[str, Any], blobs: list[bytes]
    ) -> tuple[dict[str, Any], list[bytes]]:
        name = message.get("name")
        method = self.wire.CLASS_METHOD
        if isinstance(name, str) and name.startswith(method):  # as the judge read it
            target = getattr(type(owner), name.removeprefix(method)).__get__(owner)
        else:
            target = owner if name is None else _special(owner, name) or _attribute(owner, name)
        # Arguments sharing the judge's memory are views of one base here too.
        bases = self.wire.decode(message.get("bases") or {"L": []}, blobs)

        def view(ref: list[Any]) -> Any:
            serial, offset, shape, stride = ref
            if serial >= 0:
                return self.sent.view(ref)
            base = bases[-serial - 1]
            return base.as_strided(shape, stride, int(base.storage_offset()) + offset)

        args = self.value(message["args"], blobs, view)
        kwargs = self.value(message["kwargs"], blobs, view)
        arguments = _tensors([*args, *kwargs.values()])
        before = {id(t): _pointer(t) for t in arguments}
        as_found = _as_found(arguments)
        import torch

        watched = bool(message.get("forbid")) or bool(message.get("count"))
        mode = Forbidden.mode(message.get("forbid") or [], self.wire) if watched else None
        with contextlib.ExitStack() as stack:  # the judge's grad and inference modes hold here
            stack.enter_context(torch.set_grad_enabled(message.get("grad", True) is True))
            if message.get("inference") is True:
                stack.enter_context(torch.inference_mode())
            for kind, dtype in _autocast_regions(message.get("autocast")):  # the judge's autocast
                stack.enter_context(torch.autocast(kind, dtype=getattr(torch, dtype)))
            if mode is not None:
                stack.enter_context(mode)
            # the Triton launches the call makes, for a test that compares them with a ledger
            launches = stack.enter_context(_launches(message.get("launches") is True))
            try:
                result = target(*args, **kwargs)
            except Exception as error:  # a rejection: what it left in its arguments goes too
                sent: list[bytes] = []
                left = [self._after(v, sent, before, as_found) for v in [*args, *kwargs.values()]]
                raise CallRaisedError(error, left, sent) from error
            grad_after = torch.is_grad_enabled()  # a candidate that switched it and left it
        if _module_walk(result, owner, name):  # a walk of a module: its items in one reply
            result = self.wire.Drained(result)
        out: list[bytes] = []
        after = [self._after(value, out, before, as_found) for value in [*args, *kwargs.values()]]
        reply = {"value": self.encode(result, out), "after": after}
        if isinstance(result, dict | list):
            reply["serial"] = self.kept.serial(result)
        if grad_after != (message.get("grad", True) is True):
            reply["grad_after"] = grad_after  # so: the judge's mode is left switched too
        if dataclasses.is_dataclass(result) and self._of_module(type(result)):
            # a dataclass of the candidate's (a model's output): its fields now, read next
            fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
            reply["fields"] = self.encode(fields, out)
        if message.get("launches") is True:
            reply["launches"] = launches
        if mode is not None:
            reply["seen"] = list(mode.seen)
            reply["calls"] = mode.calls
            reply["largest"] = mode.largest
        return reply, out

    def _of_module(self, kind: type) -> bool:
        """Is `kind` a class the candidate's module defines (by its name there)?"""
        return getattr(self.module, kind.__name__, None) is kind

    def write_through(self, writes: list[Any], blobs: list[bytes]) -> None:
        """What the test wrote into its copy of one of our tensors, written into ours."""
        for serial, data in writes:
            tensor = self.sent.tensors.get(serial)
            value = self.value(data, blobs)
            if tensor is not None and value.shape == tensor.shape and value.dtype == tensor.dtype:
                with contextlib.suppress(RuntimeError):  # memory a write cannot reach
                    _write_back(tensor, value)

    def _after(
        self, value: Any, out: list[bytes], before: dict[int, int], found: AsFound, depth: int = 0
    ) -> Any:
        """A tensor or generator argument as it is now, at any depth of lists, tuples and
        dicts (the judge mirrors each into its own), and whether the call moved a tensor
        to other memory; None for anything else. A tensor the call left as it was goes
        back without its bytes (`wire.unchanged`): the judge's copy holds them already."""
        import torch

        def facts(tensor: Any) -> dict[str, Any]:
            moved = before.get(id(tensor), _pointer(tensor)) != _pointer(tensor)
            return {**self.sent.facts(tensor), "moved": int(moved)}

        if isinstance(value, torch.Tensor) and value.layout != torch.strided:
            return None  # a sparse argument is not mirrored back
        as_it_was = isinstance(value, torch.Tensor) and _as_it_was(value, found.get(id(value)))
        if as_it_was and not self.wire.travels_whole(value):  # a guarded buffer's guards may
            return self.wire.unchanged(facts(value), self.wire.sent_bytes(value))  # have changed
        if isinstance(value, torch.Tensor | torch.Generator):
            return self.wire.encode(value, out, facts=facts)
        if depth < 8 and isinstance(value, list | tuple):
            return {"L": [self._after(item, out, before, found, depth + 1) for item in value]}
        if depth < 8 and isinstance(value, dict):
            items = value.values()
            return {"L": [self._after(item, out, before, found, depth + 1) for item in items]}
        return None


def _write_back(original: Any, value: Any, depth: int = 0) -> None:
    """What the judge's code left in a tensor or generator we lent it, written into ours
    (at any depth of lists, tuples and dicts)."""
    import torch

    if isinstance(original, list | tuple | dict) and isinstance(value, list) and depth < 8:
        items = original.values() if isinstance(original, dict) else original
        for item, item_value in zip(items, value, strict=False):
            if item_value is not None:
                _write_back(item, item_value, depth + 1)
    elif isinstance(original, torch.Tensor) and isinstance(value, torch.Tensor):
        if value.shape != original.shape or value.dtype != original.dtype:
            with torch.no_grad():
                original.set_(value.to(original.device).clone())  # type: ignore[call-overload]
        elif not torch.equal(value.to(original.device), original.detach()):
            writing = torch.inference_mode if original.is_inference() else torch.no_grad
            with writing():
                original.copy_(value)
    elif isinstance(original, torch.Generator) and isinstance(value, torch.Generator):
        original.set_state(value.get_state())


# What a tensor argument was when the call began: the tensor (held, so its id names it
# throughout), its layout and place in memory, and a copy of its bytes (as integers).
AsFound = dict[int, tuple[Any, tuple[Any, ...], Any]]
_BITS = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}  # an integer type of each size


def _as_found(tensors: list[Any]) -> AsFound:
    """Each CPU tensor argument as the call finds it. Its bytes are copied, not its version
    counter read: a write through `.data` or another tensor over its storage leaves the
    counter as it was, and must still reach the judge."""
    import torch

    found: AsFound = {}
    for tensor in tensors:
        bits = _BITS.get(tensor.element_size()) if tensor.device.type == "cpu" else None
        if bits is not None:
            copy = tensor.detach().clone().view(getattr(torch, bits))
            found[id(tensor)] = (tensor, _layout(tensor), copy)
    return found


def _layout(tensor: Any) -> tuple[Any, ...]:
    """A CPU tensor's type, shape, strides, storage offset and data pointer."""
    shape, stride, offset = tensor.shape, tensor.stride(), tensor.storage_offset()
    return tensor.dtype, shape, stride, offset, tensor.data_ptr()


def _as_it_was(tensor: Any, found: tuple[Any, tuple[Any, ...], Any] | None) -> bool:
    """Is `tensor` as the call found it: the same object, layout, memory and bytes (bit for
    bit: a NaN, or -0.0 written over 0.0, compares as its bits)?"""
    if found is None or found[0] is not tensor or _layout(tensor) != found[1]:
        return False
    import torch

    return bool(torch.equal(tensor.detach().view(found[2].dtype), found[2]))


def _nbytes(tensor: Any) -> int:
    return 0 if tensor.device.type == "meta" else int(tensor.untyped_storage().nbytes())


def _pointer(tensor: Any) -> int:
    return 0 if tensor.device.type == "meta" else int(tensor.data_ptr())


def _launches(wanted: bool) -> Any:
    """Record the call's Triton launches when the judge asks (a kernel's ledger test)."""
    if not wanted:
        return contextlib.nullcontext([])
    from gptlab_worker import launches  # triton is imported by the candidate, if at all

    return launches.recording()


def _tensors(value: Any, depth: int = 0) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value] if value.layout == torch.strided else []
    if depth < 8 and isinstance(value, list | tuple | dict):
        items = value.values() if isinstance(value, dict) else value
        return [t for item in items for t in _tensors(item, depth + 1)]
    return []


def _module_walk(value: Any, owner: Any, name: Any) -> bool:
    """A generator of torch.nn.Module's own (`parameters()`, `named_modules()`...) or an
    iterator over a module container (`iter(model.blocks)`): it only reads the module,
    so its items may be sent at once instead of one round trip each."""
    import types

    import torch

    if name == "__iter__" and isinstance(owner, torch.nn.Module):
        return True
    code = getattr(value, "gi_code", None) if isinstance(value, types.GeneratorType) else None
    return code is not None and code.co_filename.replace("\\", "/").endswith(
        "torch/nn/modules/module.py"
    )


def _special(owner: Any, name: str) -> Any:
    """Python's protocols, as Python applies them (looked up on the type): None for a
    plain name."""
    protocols = {
        "__iter__": lambda: iter(owner),
        "__next__": lambda: next(owner),
        "__len__": lambda: len(owner),
        "__bool__": lambda: bool(owner),
        "__getitem__": lambda key: owner[key],
        "__setitem__": lambda key, value: owner.__setitem__(key, value),
        "__setattr__": lambda name, value: setattr(owner, name, value),
        "__delattr__": lambda name: delattr(owner, name),
        "__eq__": lambda other: owner == other,
        "__hash__": lambda: hash(owner),
        "__deepcopy__": lambda: copy.deepcopy(owner),
        "__copy__": lambda: copy.copy(owner),
    }
    return protocols.get(name)


def _class_facts(cls: type) -> dict[str, Any]:
    """What the judge's stand-in type for a class shows: its name and, for a dataclass,
    each field as [name, init, has a default, the default where it is plain data]."""

    if not dataclasses.is_dataclass(cls):
        return {"name": cls.__name__}
    rows = []
    for field in dataclasses.fields(cls):
        default = field.default
        if default is dataclasses.MISSING and field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        plain = isinstance(default, bool | int | float | str | None)  # else shown as none
        rows.append([field.name, bool(field.init), plain, default if plain else None])
    params = getattr(cls, "__dataclass_params__", None)
    return {"name": cls.__name__, "fields": rows, "frozen": bool(getattr(params, "frozen", 0))}


def _torch_class(path: str) -> Any:
    """torch.nn.Module for "torch.nn.Module": a class under torch, nothing else."""
    import torch

    if not path.startswith("torch."):
        raise ValueError(f"{path} is not a torch class")
    value = _attribute(torch, path.removeprefix("torch."))
    if not isinstance(value, type):
        raise ValueError(f"{path} is not a class")
    return value


def _parameters(function: Any) -> list[list[Any]]:
    """A callable's signature as [name, kind, has a default, the default where it is plain
    data] rows (what `assert_binds` and a test's `signature.bind` read in the judge)."""
    import inspect

    def plain(value: Any) -> Any:
        return value if value is None or isinstance(value, bool | int | float | str) else None

    signature = inspect.signature(function)
    return [
        [p.name, int(p.kind), p.default is not inspect.Parameter.empty, plain(p.default)]
        for p in signature.parameters.values()
    ]


def _attribute(owner: Any, name: str) -> Any:
    """`owner.a.b` for the name "a.b": a class's method is reached through the module."""
    for part in name.split("."):
        owner = getattr(owner, part)
    return owner


def plain_state(value: Any, depth: int = 0, seen: dict[int, str] | None = None) -> Any:
    """An object's state as plain data and tensors, what the judge fingerprints: a
    module's mode and state dict, a generator's state, containers, attributes and
    slots of other objects; a shared object once, then by the path it was first met."""
    import torch

    seen = {} if seen is None else seen
    if value is None or isinstance(value, bool | int | float | str | torch.dtype | torch.device):
        return value
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, torch.Generator):
        return {"state": value.get_state()}
    if id(value) in seen:
        return f"<same object as {seen[id(value)]}>"
    if depth >= 12:
        return "<too deep>"
    if isinstance(value, JudgeObject):  # the judge's, not the candidate's state
        return f"<lent by the grader: {value._kind}>"
    seen[id(value)] = f"<{depth}:{type(value).__qualname__}:{len(seen)}>"

    def inner(item: Any) -> Any:
        return plain_state(item, depth + 1, seen)

    if isinstance(value, torch.nn.Module):
        state = value.state_dict(keep_vars=True)
        return {"training": value.training, **{k: inner(t) for k, t in state.items()}}
    if isinstance(value, dict):
        return {repr(key)[:200]: inner(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [inner(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted(repr(item)[:200] for item in value)
    attributes = dict(getattr(value, "__dict__", {}))
    for klass in type(value).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if isinstance(slot, str) and hasattr(value, slot):
                attributes[slot] = getattr(value, slot)
    if not attributes:
        return repr(value)[:200]
    return {"<type>": type(value).__qualname__, **{k: inner(v) for k, v in attributes.items()}}


CAPABILITY_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
PR_CAPBSET_DROP, CAPABILITY_VERSION_3 = 24, 0x20080522


def give_up_root(uid: int, gid: int) -> None:
    """Become `uid`:`gid` with no capability, for good, before anything else is read. As
    root in the sandbox (bubblewrap kept CAP_SETUID, CAP_SETGID and CAP_SETPCAP only):
    empty the bounding set (CAP_SETPCAP), then the inheritable set, then leave uid 0 (the
    kernel then clears the permitted, effective and ambient sets). SystemExit if any
    capability or id of root is left."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise SystemExit(f"worker: cannot give up capability {cap}")
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    keep = (1 << 6) | (1 << 7)  # CAP_SETGID, CAP_SETUID: effective and permitted, until below
    data = (ctypes.c_uint32 * 6)(keep, keep, 0, 0, 0, 0)  # (effective, permitted, inheritable) x2
    if libc.capset(header, data) != 0:
        raise SystemExit("worker: cannot clear its inheritable capabilities")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (gid,) * 3 or any(capabilities()):
        raise SystemExit("worker: root's ids or capabilities stayed")


def capabilities() -> list[int]:
    """This process's capability sets (inheritable, permitted, effective, bounding,
    ambient) as the kernel reports them."""
    found = dict.fromkeys(CAPABILITY_FIELDS, -1)
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in found:
            found[key] = int(value.strip(), 16)
    return list(found.values())


def probe(roots: list[str]) -> None:
    """What the sandbox check (`sandbox.refusal`) reads: ids, capabilities, and the first
    of the interpreter's and torch's files this user cannot read."""
    import json

    sys.path.extend(roots)
    needed = [sys.executable, os.__file__]
    for name in ("torch", "numpy"):
        spec = importlib.util.find_spec(name)
        needed.append(str(spec.origin) if spec and spec.origin else f"{name} (not found)")
    unreadable = next((path for path in needed if not os.access(path, os.R_OK)), "")
    print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "caps": capabilities(),
                      "unreadable": unreadable}))  # fmt: skip


def main(argv: list[str]) -> None:
    user = os.environ.pop("GPTLAB_WORKER_USER", "")
    if user:  # as root, in the sandbox: first of all
        uid, _, gid = user.partition(":")
        give_up_root(int(uid), int(gid))
    if argv[:1] == ["--probe"]:
        probe(argv[1:])
        return
    fd_in, fd_out = int(argv[0]), int(argv[1])
    refused = argv[2].split(",") if argv[2] else []
    sys.path.extend(argv[3:])  # where torch lives; nothing of this project
    refuser = Refuser(refused)
    sys.meta_path.insert(0, refuser)
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    from gptlab_worker import wire  # it imports torch: found only on the paths above

    torch.set_num_threads(1)
    try:
        Server(wire, refuser, fd_in, fd_out).serve()
    except wire.WireError:  # the judge closed the pipe: the grading is over
        os._exit(0)


def _autocast_regions(state: object) -> list[tuple[str, str]]:
    """The judge's autocast regions to enter, only the device types and dtypes it may send."""
    if not isinstance(state, dict):
        return []
    return [
        (kind, dtype)
        for kind, dtype in state.items()
        if kind in ("cpu", "cuda") and dtype in ("float16", "bfloat16", "float32")
    ]
