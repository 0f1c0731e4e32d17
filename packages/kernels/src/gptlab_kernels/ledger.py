"""The ledger's two checkable fields: the launch grid and the traffic, read as formulas.

A formula is written in backticks inside the field's prose. In a module that grades two
functions, a formula names its function first (`transpose: 2 * M * N * size(x)`); a
function that launches twice gives one grid formula a launch, in launch order.

- A grid formula is a tuple over the kernel's shape names (each kernel's README section
  lists them), the launch's own integer arguments by parameter name (`n`, `BLOCK`, ...)
  and `cdiv(a, b)`. It must equal the grid the launch ran over.
- A traffic formula counts bytes over the shape names and `size(arg)`, the bytes of one
  element of the graded function's argument `arg`. It must lie between the bytes the call
  must move (each input element it depends on read once, each output written once) and
  twice that: a formula that forgets a buffer, or counts one twice, is off by more.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

FORMULA = re.compile(r"`([^`]+)`")
TRAFFIC_SLACK = 2.0  # room for workspace and re-reads a design states beside the minimum
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}


class LedgerError(ValueError):
    """A formula that is not one: an unknown name, an operation outside arithmetic."""


def formulas(ledger: object, field: str, function: str) -> list[str]:
    """The field's formulas for `function`: unlabelled ones, and those labelled with it."""
    text = str(ledger.get(field, "")) if isinstance(ledger, dict) else ""
    found = []
    for body in FORMULA.findall(text):
        label, colon, rest = body.partition(":")
        if colon and label.strip().isidentifier():
            if label.strip() == function:
                found.append(rest.strip())
        else:
            found.append(body.strip())
    return found


def evaluate(formula: str, names: Mapping[str, int], sizes: Mapping[str, int] = {}) -> Any:
    """The formula's value: arithmetic over `names`, `cdiv`, `max`, `min` and `size(arg)`."""
    try:
        tree = ast.parse(formula, mode="eval").body
    except SyntaxError as error:
        raise LedgerError(f"`{formula}` is not a formula: {error.msg}") from None
    return _value(tree, formula, names, sizes)


def _value(node: ast.AST, formula: str, names: Mapping[str, int], sizes: Mapping[str, int]) -> Any:
    def walk(child: ast.AST) -> Any:
        return _value(child, formula, names, sizes)

    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise LedgerError(f"`{formula}` names {node.id!r}; known: {sorted(names)}")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](walk(node.left), walk(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -walk(node.operand)
    if isinstance(node, ast.Tuple):
        return tuple(walk(item) for item in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        return _call(node.func.id, node.args, formula, sizes, walk)
    raise LedgerError(f"`{formula}`: only arithmetic, cdiv, max, min and size(arg) are read")


def _call(
    name: str, args: list[ast.expr], formula: str, sizes: Mapping[str, int], walk: Any
) -> Any:
    if name == "size" and len(args) == 1 and isinstance(args[0], ast.Name):
        if args[0].id not in sizes:
            raise LedgerError(f"`{formula}`: size() of {args[0].id!r}; known: {sorted(sizes)}")
        return sizes[args[0].id]
    if name == "cdiv" and len(args) == 2:
        top, bottom = walk(args[0]), walk(args[1])
        return -(-top // bottom)
    if name in ("max", "min") and args:
        return (max if name == "max" else min)(walk(arg) for arg in args)
    raise LedgerError(f"`{formula}`: unknown function {name}()")


def grid_mismatch(
    ledger: object, function: str, launches: Sequence[Mapping[str, Any]], names: Mapping[str, int]
) -> str | None:
    """Why the stated grids are not the launches' grids (None when each one is)."""
    stated = formulas(ledger, "grid", function)
    if len(stated) != len(launches):
        return (
            f"LEDGER['grid'] states {len(stated)} grid formula(s) in backticks for {function}; "
            f"the call launched {len(launches)} kernel(s)"
        )
    for formula, launch in zip(stated, launches, strict=True):
        value = evaluate(formula, {**names, **launch["ints"]})
        cells = list(value) if isinstance(value, tuple) else [value]
        grid = tuple(int(cell) for cell in cells) + (1,) * (3 - len(cells))
        if grid != tuple(launch["grid"]):
            return (
                f"LEDGER['grid'] `{formula}` is {grid} here, but {launch['kernel']} was "
                f"launched over {tuple(launch['grid'])}"
            )
    return None


def traffic_mismatch(
    ledger: object, function: str, names: Mapping[str, int], sizes: Mapping[str, int], moved: int
) -> str | None:
    """Why the stated traffic is not the bytes the call must move (None when it is)."""
    stated = formulas(ledger, "traffic", function)
    if len(stated) != 1:
        return f"LEDGER['traffic'] states {len(stated)} formulas in backticks for {function}, not 1"
    value = evaluate(stated[0], names, sizes)
    if not moved <= value <= TRAFFIC_SLACK * moved:
        return (
            f"LEDGER['traffic'] `{stated[0]}` is {value} bytes at {dict(names)}; the call must "
            f"move {moved} bytes (at most {TRAFFIC_SLACK:g}x that is accepted)"
        )
    return None


def bytes_of(*tensors: Any) -> int:
    """The bytes of these tensors' elements (each read or written once)."""
    return sum(int(t.numel()) * int(t.element_size()) for t in tensors)


__all__ = [
    "LedgerError",
    "bytes_of",
    "evaluate",
    "formulas",
    "grid_mismatch",
    "traffic_mismatch",
]
