"""The candidate's worker: a fresh interpreter that runs the candidate's code and nothing else.

Started by the judge (`judge.Worker`) as `python -I -S -B worker.py SITE_DIR...`: no
site-packages but the directories given (where torch lives), no `.pth` file (so no
editable install of this project), no user site, no environment. It is never imported
as part of gptlab_testkit, and imports neither the testkit, pytest, the tests nor the
reference: `Refuser`, first on `sys.meta_path`, refuses the project's packages and the
test tools, and records each attempt (the judge fails the test that made it, naming it).

The candidate's files come over the pipe as source (the worker needs no access to the
submission's folder) and are imported from memory: a file answers the plain name of its
stem, `name_attempt.py` also `name`. The judge then sends calls; each answer carries
the result (by value, or a handle for an object that stays here), every tensor and
generator argument as it is after the call (so the judge sees in-place writes), what a
forbidden-call guard saw, and the refused imports. Messages: see `wire`.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any


def _load_wire() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_gptlab_wire", Path(__file__).with_name("wire.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_gptlab_wire"] = module
    spec.loader.exec_module(module)
    return module


Reply = tuple[dict[str, Any], list[bytes]]


class Refuser(importlib.abc.MetaPathFinder):
    """Refuses the modules a candidate may not use; remembers who asked for what."""

    def __init__(self, refused: list[str]) -> None:
        self.refused = tuple(refused)
        self.attempts: list[str] = []

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        top = fullname.partition(".")[0]
        if top in self.refused or top.startswith("__editable__"):
            self.attempts.append(fullname)
            raise ImportError(
                f"{fullname} is out of the candidate's reach (graded code may not use it)"
            )
        return None


class Sources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The submission's files, imported from the source the judge sent."""

    def __init__(self, files: dict[str, list[str]]) -> None:
        self.files = files  # plain name -> [path, source]

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname in self.files:
            origin = self.files[fullname][0]
            return importlib.util.spec_from_loader(fullname, self, origin=origin)
        return None

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        origin, source = self.files[module.__name__]
        module.__file__ = origin
        exec(compile(source, origin, "exec"), module.__dict__)


class Forbidden:
    """A TorchFunctionMode built lazily (torch is imported after the refuser is in place)."""

    @staticmethod
    def mode(names: list[str]) -> Any:
        import torch
        from torch.overrides import TorchFunctionMode

        def resolve(name: str) -> Any:
            owner: Any = torch
            for part in name.split("."):
                owner = getattr(owner, part)
            return owner

        forbidden = {resolve(name): name for name in names}

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                if func in forbidden:
                    self.seen.append(forbidden[func])  # type: ignore[attr-defined]
                return func(*args, **(kwargs or {}))

        mode = Mode()
        mode.seen = []  # type: ignore[attr-defined]
        return mode


class Server:
    def __init__(self, wire: Any, refuser: Refuser, fd_in: int, fd_out: int) -> None:
        self.wire, self.refuser = wire, refuser
        self.fd_in, self.fd_out = fd_in, fd_out
        self.objects: dict[int, Any] = {}
        self.module: Any = None

    def handle_of(self, value: Any) -> tuple[int, str]:
        self.objects[id(value)] = value
        return id(value), type(value).__qualname__

    def value(self, data: Any, blobs: list[bytes]) -> Any:
        return self.wire.decode(data, blobs, lambda ident, kind: self.objects[ident])

    def answer(self, message: dict[str, Any], blobs: list[bytes] | None = None) -> None:
        message["refused"] = list(self.refuser.attempts)
        self.refuser.attempts.clear()
        self.wire.send(self.fd_out, message, blobs or [])

    def serve(self) -> None:
        while True:
            message, blobs = self.wire.receive(self.fd_in)
            try:
                self.answer(*self.dispatch(message, blobs))
            except BaseException as error:  # the candidate's exception, reported by name
                if isinstance(error, SystemExit | KeyboardInterrupt) and message.get("op") == "bye":
                    raise
                self.answer({"raised": [type(error).__name__, str(error)[:2000],
                                        traceback.format_exc()[-3000:]]})  # fmt: skip

    def dispatch(
        self, message: dict[str, Any], blobs: list[bytes]
    ) -> tuple[dict[str, Any], list[bytes]]:
        op = message.get("op")
        if op == "load":
            return self.load(message)
        owner = self.module if message.get("handle") is None else self.objects[message["handle"]]
        if op == "getattr":
            out: list[bytes] = []
            return {
                "value": self.wire.encode(getattr(owner, message["name"]), out, self.handle_of)
            }, out
        if op == "call":
            return self.call(owner, message, blobs)
        raise ValueError(f"unknown request {op!r}")

    def load(self, message: dict[str, Any]) -> Reply:
        sys.meta_path.insert(1, Sources(message["files"]))
        self.module = importlib.import_module(message["main"])
        names = sorted(name for name in dir(self.module) if not name.startswith("__"))
        return {"names": names, "file": getattr(self.module, "__file__", "")}, []

    def call(
        self, owner: Any, message: dict[str, Any], blobs: list[bytes]
    ) -> tuple[dict[str, Any], list[bytes]]:
        target = owner if message.get("name") is None else getattr(owner, message["name"])
        args = self.value(message["args"], blobs)
        kwargs = self.value(message["kwargs"], blobs)
        mode = Forbidden.mode(message["forbid"]) if message.get("forbid") else None
        if mode is not None:
            with mode:
                result = target(*args, **kwargs)
        else:
            result = target(*args, **kwargs)
        out: list[bytes] = []
        after = [self._after(value, out) for value in [*args, *kwargs.values()]]
        reply = {"value": self.wire.encode(result, out, self.handle_of), "after": after}
        if mode is not None:
            reply["seen"] = list(mode.seen)
        return reply, out

    def _after(self, value: Any, out: list[bytes]) -> Any:
        import torch

        if isinstance(value, torch.Tensor | torch.Generator):
            return self.wire.encode(value, out)
        return None


def main(argv: list[str]) -> None:
    fd_in, fd_out = int(argv[0]), int(argv[1])
    refused = argv[2].split(",") if argv[2] else []
    sys.path.extend(argv[3:])  # where torch lives; nothing of this project
    refuser = Refuser(refused)
    sys.meta_path.insert(0, refuser)
    os.environ["OMP_NUM_THREADS"] = "1"
    wire = _load_wire()
    import torch

    torch.set_num_threads(1)
    try:
        Server(wire, refuser, fd_in, fd_out).serve()
    except wire.WireError:  # the judge closed the pipe: the grading is over
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
