"""A graded callable's signature, read in the judge from the submitted source.

A signature clause ("the drill takes these five tensors, in this order, by these names")
is a fact about the code the learner handed in. Asked of the worker, it is the worker's
word: a candidate can set `__signature__` or rewrite what the worker reports. The judge
holds the submission's files, so it reads the `def` itself: a module-level function, a
class's `__init__` (its first parameter dropped) or a method, through plain aliases
(`name = other`, `name = lambda ...`) and imports from the submission's own files.

Anything the source does not settle (a name bound in two branches, a dataclass, a
`functools.partial`, an import from outside the submission) gives None: the judge then
asks the worker and notes the answer as advisory.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from typing import Any

_MAX_HOPS = 8  # aliases and imports followed before giving up (a cycle ends here too)
_PLAIN = (bool, int, float, str, type(None))


def from_source(files: dict[str, str], module: str, path: str) -> inspect.Signature | None:
    """The signature of `module`'s attribute `path` ("f", "Class", "Class.method"), where
    `files` maps the submission's file names to their sources; None where unsettled."""
    head, *rest = path.split(".")
    node = _resolve(files, module, head, hops=0)
    if node is None:
        return None
    is_class_method = False
    for part in rest:  # Class.method (or Class.Inner): look inside the class body
        if not isinstance(node, ast.ClassDef):
            return None
        found = _binding(node.body, part)
        if not isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return None
        is_class_method = _decorated(found, "classmethod")
        if _decorated(found, "staticmethod"):
            is_class_method = False
        node = found
    if isinstance(node, ast.ClassDef):
        init = _binding(node.body, "__init__")
        if not isinstance(init, ast.FunctionDef) or _binding(node.body, "__new__") is not None:
            return None  # a dataclass, an inherited or a generated __init__: not settled here
        return _signature(init.args, drop_first=True)
    if isinstance(node, ast.Lambda):
        return _signature(node.args, drop_first=False)
    return _signature(node.args, drop_first=is_class_method)


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda


def _resolve(files: dict[str, str], module: str, name: str, hops: int) -> Definition | None:
    """What `module.name` is bound to, followed through aliases and the submission's imports."""
    source = files.get(f"{module}.py")
    if source is None or hops > _MAX_HOPS:
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    bound = _binding(tree.body, name)
    if isinstance(bound, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
        return bound
    if isinstance(bound, ast.Name):  # name = other
        return _resolve(files, module, bound.id, hops + 1)
    if isinstance(bound, ast.ImportFrom) and bound.module and (bound.level or 0) <= 1:
        original = next(a.name for a in bound.names if (a.asname or a.name) == name)
        return _resolve(files, bound.module, original, hops + 1)
    return None


def _binding(body: list[ast.stmt], name: str) -> ast.AST | None:
    """The one statement that binds `name` in this body (a def, a class, `name = value`'s
    value, an import); None when none does, or when a branch or a second binding does."""
    found: list[ast.AST] = []
    for statement, conditional in _statements(body):
        bound = _bound_by(statement, name)
        if bound is not None:
            if conditional:
                return None
            found.append(bound)
    return found[-1] if len(found) == 1 else None


def _statements(body: list[ast.stmt], conditional: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    for statement in body:
        yield statement, conditional
        if isinstance(statement, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(statement, field, [])
                for item in inner:
                    nested = item.body if isinstance(item, ast.ExceptHandler) else [item]
                    yield from _statements(nested, conditional=True)


def _bound_by(statement: ast.stmt, name: str) -> ast.AST | None:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return statement if statement.name == name else None
    if isinstance(statement, ast.Assign):
        targets = [t.id for t in statement.targets if isinstance(t, ast.Name)]
        if name in targets:
            return statement.value
        return ast.Pass() if _binds_inside(statement.targets, name) else None
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        target = statement.target
        if isinstance(target, ast.Name) and target.id == name:
            return statement.value if isinstance(statement, ast.AnnAssign) else ast.Pass()
        return None
    if isinstance(statement, ast.ImportFrom | ast.Import):
        return statement if any((a.asname or a.name) == name for a in statement.names) else None
    return None


def _binds_inside(targets: list[ast.expr], name: str) -> bool:
    """`a, name = ...` binds name too, to something the source does not settle."""
    names = (n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return any(n.id == name and isinstance(n.ctx, ast.Store) for n in names)


def _decorated(node: ast.AST, decorator: str) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any(isinstance(d, ast.Name) and d.id == decorator for d in decorators)


def _signature(arguments: ast.arguments, drop_first: bool) -> inspect.Signature:
    kind = inspect.Parameter
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    defaults += arguments.defaults
    rows: list[tuple[str, Any, ast.expr | None, bool]] = [
        (
            a.arg,
            kind.POSITIONAL_ONLY if i < len(arguments.posonlyargs) else kind.POSITIONAL_OR_KEYWORD,
            d,
            d is not None,
        )
        for i, (a, d) in enumerate(zip(positional, defaults, strict=True))
    ]
    if drop_first and rows:
        rows = rows[1:]
    if arguments.vararg is not None:
        rows.append((arguments.vararg.arg, kind.VAR_POSITIONAL, None, False))
    for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        rows.append((a.arg, kind.KEYWORD_ONLY, d, d is not None))
    if arguments.kwarg is not None:
        rows.append((arguments.kwarg.arg, kind.VAR_KEYWORD, None, False))
    return inspect.Signature(
        [
            kind(name, parameter_kind, default=_default(value) if has else kind.empty)
            for name, parameter_kind, value, has in rows
        ]
    )


def _default(expression: ast.expr | None) -> Any:
    """A default that is plain data, as itself; any other, as a stand-in."""
    try:
        value = ast.literal_eval(expression) if expression is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "<the candidate's default>"
    return value if isinstance(value, _PLAIN) else "<the candidate's default>"
