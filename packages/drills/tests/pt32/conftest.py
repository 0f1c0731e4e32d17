"""PT32's saved program, read and run here, in the test's process, without unpickling.

The candidate hands back the bytes `torch.export.save` writes. `torch.export.load` would
unpickle part of that archive (its sample inputs) and hand symbolic sizes to sympy, which
evaluates strings; neither may run on a candidate's bytes. So the test reads only the
archive's JSON graph (`models/model.json`) and runs it node by node itself: every target
must be an ATen operator named in plain identifiers, every argument one of a few plain
kinds, strings only as an assertion's message. What the graph computes is then a value
this process computed, never the worker's word.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch._export.serde.schema import Layout, MemoryFormat, ScalarType
from torch._export.serde.serialize import (
    _SERIALIZE_TO_TORCH_DTYPE,
    _SERIALIZE_TO_TORCH_LAYOUT,
    _SERIALIZE_TO_TORCH_MEMORY_FORMAT,
)

MAX_JSON = 4 * 1024 * 1024  # bytes of graph: a logits processor is a few kB
MAX_NODES = 400
TARGET = re.compile(r"torch\.ops\.aten\.([a-z_][a-z0-9_]*)\.([A-Za-z0-9_]+)")
MESSAGE_OPS = frozenset({"_assert_async", "_assert_scalar"})  # a string is their message
PLAIN = ("as_int", "as_bool", "as_ints", "as_bools", "as_none")
NONFINITE = ("Infinity", "-Infinity", "NaN")  # how the JSON spells a float it cannot hold


class UnreadableProgramError(AssertionError):
    """The bytes are not a saved program this reader runs (a failed check, not a crash)."""


@dataclass(frozen=True)
class SavedProgram:
    """The graph of a saved exported program: what the test runs and inspects."""

    graph: dict[str, Any]
    signature: dict[str, Any]

    @property
    def nodes(self) -> list[dict[str, Any]]:
        return list(self.graph["nodes"])

    def op_names(self) -> list[str]:
        return [_target(node)[0] for node in self.nodes]

    def input_sizes(self) -> list[list[int | str]]:
        """Each input's declared sizes: an int where fixed, the symbol's text where dynamic."""
        return [_declared(self.graph["tensor_values"][name]) for name in self.input_names()]

    def input_names(self) -> list[str]:
        return [arg["as_tensor"]["name"] for arg in self.graph["inputs"]]

    def arguments(self) -> list[dict[str, Any]]:
        return [item["arg"] for node in self.nodes for item in node["inputs"]]

    def run(self, *inputs: torch.Tensor) -> torch.Tensor:
        """The graph's one output for these inputs; UnreadableProgramError where they break a
        size or dtype the program declares (its constraints)."""
        names = self.input_names()
        if len(inputs) != len(names):
            raise UnreadableProgramError(
                f"the program takes {len(names)} inputs, got {len(inputs)}"
            )
        env: dict[str, Any] = {}
        symbols: dict[str, int] = {}
        for name, tensor in zip(names, inputs, strict=True):
            _conform(name, tensor, self.graph["tensor_values"][name], symbols)
            env[name] = tensor
        for node in self.nodes:
            _run_node(node, env)
        outputs = [_value(arg, env) for arg in self.graph["outputs"]]
        if len(outputs) != 1 or not isinstance(outputs[0], torch.Tensor):
            raise UnreadableProgramError(
                f"the program returns {len(outputs)} values, want 1 tensor"
            )
        return outputs[0]


def read_saved_program(archive: torch.Tensor) -> SavedProgram:
    """The program in `archive` (uint8 bytes of `torch.export.save`), checked for what this
    reader runs: user inputs and outputs only (no weights, constants or tokens)."""
    if not isinstance(archive, torch.Tensor) or archive.dtype != torch.uint8 or archive.dim() != 1:
        raise UnreadableProgramError(
            f"want a 1-D uint8 tensor of bytes, got {type(archive).__name__}"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(archive.numpy().tobytes())) as zipped:
            members = [m for m in zipped.infolist() if m.filename.endswith("models/model.json")]
            if len(members) != 1 or members[0].file_size > MAX_JSON:
                raise UnreadableProgramError(
                    "want one models/model.json of a few kB in the archive"
                )
            program = json.loads(zipped.read(members[0]))
        graph, signature = program["graph_module"]["graph"], program["graph_module"]["signature"]
    except (zipfile.BadZipFile, KeyError, TypeError, ValueError) as error:
        raise UnreadableProgramError(f"not a saved exported program: {error!r}") from error
    if not isinstance(graph, dict) or len(graph.get("nodes", ())) > MAX_NODES:
        raise UnreadableProgramError("the graph is missing or holds too many nodes")
    specs = [*signature["input_specs"], *signature["output_specs"]]
    if any(set(spec) - {"user_input", "user_output"} for spec in specs):
        raise UnreadableProgramError(f"the program lifts state (weights, constants): {specs}")
    saved = SavedProgram(graph, signature)
    for node in saved.nodes:
        _target(node)  # every target is checked before anything runs
    return saved


def _target(node: dict[str, Any]) -> tuple[str, Any]:
    match = TARGET.fullmatch(str(node.get("target", "")))
    if match is None:
        raise UnreadableProgramError(f"not an ATen operator: {node.get('target')!r}")
    name, overload = match.groups()
    try:
        op = getattr(getattr(torch.ops.aten, name), overload)
    except (AttributeError, RuntimeError) as error:
        raise UnreadableProgramError(f"no such ATen operator: {name}.{overload}") from error
    if not isinstance(op, torch._ops.OpOverload):
        raise UnreadableProgramError(f"not an operator overload: {name}.{overload}")
    return name, op


def _run_node(node: dict[str, Any], env: dict[str, Any]) -> None:
    name, op = _target(node)
    args, kwargs = [], {}
    for item in node["inputs"]:
        value = _value(item["arg"], env, strings=name in MESSAGE_OPS)
        if item.get("kind") == 2:
            kwargs[str(item["name"])] = value
        else:
            args.append(value)
    result = op(*args, **kwargs)
    outputs = node["outputs"]
    if not outputs:
        return
    results = result if len(outputs) > 1 else (result,)
    for out, value in zip(outputs, results, strict=True):
        if "as_tensor" in out:
            env[out["as_tensor"]["name"]] = value
        elif "as_tensors" in out:
            for ref, item in zip(out["as_tensors"], value, strict=True):
                env[ref["name"]] = item
        elif "as_sym_int" in out:
            env[out["as_sym_int"]["as_name"]] = value
        elif "as_none" not in out:
            raise UnreadableProgramError(f"{name}: an output kind this reader does not run: {out}")


def _value(arg: dict[str, Any], env: dict[str, Any], strings: bool = False) -> Any:
    (kind, data), *rest = arg.items() if isinstance(arg, dict) else [(None, None)]
    if rest:
        raise UnreadableProgramError(f"an argument of two kinds: {arg}")
    if kind == "as_tensor":
        return env[data["name"]]
    if kind == "as_tensors":
        return [env[ref["name"]] for ref in data]
    if kind == "as_float":
        return _float(data)
    if kind == "as_floats":
        return [_float(item) for item in data]
    if kind in PLAIN:
        return None if kind == "as_none" else data
    if kind == "as_sym_int" and "as_name" in data:
        return env[data["as_name"]]
    if kind == "as_sym_ints":
        return [env[d["as_name"]] if "as_name" in d else d["as_int"] for d in data]
    if kind == "as_scalar_type":
        return _SERIALIZE_TO_TORCH_DTYPE[ScalarType(data)]
    if kind == "as_layout":
        return _SERIALIZE_TO_TORCH_LAYOUT[Layout(data)]
    if kind == "as_memory_format":
        return _SERIALIZE_TO_TORCH_MEMORY_FORMAT[MemoryFormat(data)]
    if kind == "as_device":
        return torch.device(str(data["type"]), data.get("index"))
    if kind == "as_string" and strings:
        return str(data)
    raise UnreadableProgramError(f"an argument kind this reader does not run: {kind}")


def _float(data: Any) -> float:
    if (isinstance(data, int | float) and not isinstance(data, bool)) or data in NONFINITE:
        return float(data)
    raise UnreadableProgramError(f"not a float: {data!r}")


def _declared(meta: dict[str, Any]) -> list[int | str]:
    return [s["as_int"] if "as_int" in s else str(s["as_expr"]["expr_str"]) for s in meta["sizes"]]


def _conform(
    name: str, tensor: torch.Tensor, meta: dict[str, Any], symbols: dict[str, int]
) -> None:
    """The input fits what the program declares: its dtype, every fixed size, and one size
    per symbol across inputs."""
    dtype = _SERIALIZE_TO_TORCH_DTYPE[ScalarType(meta["dtype"])]
    if tensor.dtype != dtype:
        raise UnreadableProgramError(f"{name}: the program takes {dtype}, got {tensor.dtype}")
    declared = _declared(meta)
    if len(declared) != tensor.dim():
        raise UnreadableProgramError(f"{name}: the program takes {len(declared)} dims")
    for dim, (want, got) in enumerate(zip(declared, tensor.shape, strict=True)):
        if isinstance(want, int) and want != got:
            raise UnreadableProgramError(f"{name}: dim {dim} is fixed at {want}, got {got}")
        if isinstance(want, str) and symbols.setdefault(want, got) != got:
            raise UnreadableProgramError(f"{name}: dim {dim} must equal the other inputs' {want}")


@pytest.fixture
def saved_program():
    """`saved_program(archive)` -> SavedProgram (UnreadableProgramError if it is none)."""
    return read_saved_program
