"""Mutate the @triton.jit kernels themselves, which mutmut leaves alone (it skips decorated
functions): every mask, comparison, address term, stride, `other=` fill and reduction of a
reference kernel, one edit each, each mutant graded through the judge by known_bad.

    python packages/kernels/mutation/kernel_mutants.py t01 [t02 ...] [--list]

Each mutant is the reference module with one edit, written as a known-bad candidate into a
scratch folder; `gptlab_testkit.known_bad` grades them on the kernel's contract tests (a
catch is any failed test). A mutant no test catches is listed: `accepted.toml` beside this
file must name it (by kernel and edit) with its reason, else the run fails.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src" / "gptlab_kernels"
SWAPS = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Add: "-", ast.Sub: "+",
         ast.Mult: "+", ast.Div: "*"}  # fmt: skip
REDUCTIONS = {"max": "min", "sum": "max", "min": "max", "maximum": "minimum", "exp": "exp2"}


def _segment(lines: list[str], node: ast.AST) -> tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0


def _edits(source: str) -> list[tuple[tuple[int, int, int, int], str, str]]:
    """(where, replacement, what) for every mutation site inside a @triton.jit function."""
    tree, lines = ast.parse(source), source.splitlines()
    edits = []
    for kernel in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        if not any("jit" in ast.unparse(d) for d in kernel.decorator_list):
            continue
        params = [a.arg for a in kernel.args.args if a.annotation is None]
        strides = [p for p in params if "stride" in p or (p[:1] == "s" and p[-1:].isdigit())]
        for node in ast.walk(kernel):
            if isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
                text = f"{ast.unparse(node.left)} {SWAPS[type(node.ops[0])]} "
                text += ast.unparse(node.comparators[0])
                edits.append((_segment(lines, node), text, f"{ast.unparse(node)} -> {text}"))
            elif isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
                text = (
                    f"({ast.unparse(node.left)} {SWAPS[type(node.op)]} {ast.unparse(node.right)})"
                )
                edits.append((_segment(lines, node), text, f"{ast.unparse(node)} -> {text}"))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                if name in REDUCTIONS and ast.unparse(node.func.value) == "tl":
                    text = ast.unparse(node).replace(f"tl.{name}(", f"tl.{REDUCTIONS[name]}(", 1)
                    edits.append(
                        (_segment(lines, node), text, f"tl.{name} -> tl.{REDUCTIONS[name]}")
                    )
                for kept in ("mask", "other"):
                    if any(k.arg == kept for k in node.keywords):
                        call = ast.Call(node.func, node.args,
                                        [k for k in node.keywords if k.arg not in (kept, "other")
                                         or (kept == "other" and k.arg == "mask")])  # fmt: skip
                        text = ast.unparse(call)
                        edits.append(
                            (
                                _segment(lines, node),
                                text,
                                f"tl.{name}({ast.unparse(node.args[0])}) without {kept}=",
                            )
                        )
            elif isinstance(node, ast.Name) and node.id in strides:
                for other in strides:
                    if other != node.id:
                        edits.append((_segment(lines, node), other, f"{node.id} -> {other}"))
    return edits


def _apply(source: str, where: tuple[int, int, int, int], text: str) -> str:
    lines = source.splitlines(keepends=True)
    (l0, c0, l1, c1) = where
    head = "".join(lines[: l0 - 1]) + lines[l0 - 1][:c0]
    tail = lines[l1 - 1][c1:] + "".join(lines[l1:])
    return head + text + tail


def write_candidates(kernel: str, folder: Path) -> dict[str, str]:
    """Each mutant of `kernel` as `bad_<kernel>_kernel_<n>.py` in folder: {file stem: edit}."""
    source = (SOURCE / f"{kernel}.py").read_text(encoding="utf-8")
    made = {}
    for number, (where, text, what) in enumerate(_edits(source), 1):
        mutated = _apply(source, where, text)
        # the mutant's own docstring (known_bad reads its first line) in place of the module's
        body = mutated.splitlines(keepends=True)[ast.parse(source).body[0].end_lineno or 0 :]
        mutated = "".join(body)
        docstring = f'"""Kernel mutant {number} of {kernel}: {what}."""\n'
        tail = f'\nVARIABLE = "DRILL_{kernel.upper()}_MODULE"\nEXPECTED_OWNER = "{kernel}"\n'
        tail += 'SCOPE = "all"  # a stride or dtype slip may break only an extension clause\n'
        stem = f"bad_{kernel}_kernel_{number:02d}"
        (folder / f"{stem}.py").write_text(docstring + mutated + tail, encoding="utf-8")
        made[stem] = what
    return made


def main(argv: list[str]) -> int:
    kernels = [a for a in argv if not a.startswith("-")] or ["t01", "t02", "t03"]
    accepted = tomllib.loads((HERE / "accepted.toml").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="gptlab-kernel-mutants-") as scratch:
        folder = Path(scratch)
        made = {stem: what for k in kernels for stem, what in write_candidates(k, folder).items()}
        if "--list" in argv:
            print("\n".join(f"{stem}: {what}" for stem, what in made.items()))
            return 0
        run = subprocess.run(
            [sys.executable, "-m", "gptlab_testkit.known_bad", str(folder), "--min-catches", "1",
             "--floor", "report", *[a for k in kernels for a in ("-k", k)]],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        missed = [line.split()[0] for line in run.stdout.splitlines() if "MISSED" in line]
        unaccepted = []
        for name in missed:
            stem = "bad_" + name if not name.startswith("bad_") else name
            what = made.get(stem, name)
            kernel = stem.split("_")[1]
            if what not in accepted.get(kernel, {}):
                unaccepted.append(f"{stem}: {what}")
        print(
            f"kernel mutants: {len(made)}, caught {len(made) - len(missed)}, "
            f"missed {len(missed)} ({len(missed) - len(unaccepted)} accepted)"
        )
        for line in unaccepted:
            print(f"  not accepted: {line}")
        return 1 if unaccepted else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
