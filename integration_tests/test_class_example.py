"""examples/class/README.md tells the truth about the folders beside it, without grading.

Grading the class takes minutes (its measured table is pasted from a real run); what
can go stale without one is checked here: every submission folder has a row in the
"expected verdict" table and in the measured table and no other row exists, the
measured verdicts are the expected ones, nothing in the class is a link (a class run
refuses links), and every submission imports only the standard library, torch and the
modules of its own folder (a submission's code runs where this project's packages are
out of reach) -- except the one whose row says it reaches for the reference.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

CLASS = Path(__file__).resolve().parents[1] / "examples" / "class"
REACHES = "reaches_for_the_reference"  # its row: not graded, for importing tinygpt
ALLOWED = set(sys.stdlib_module_names) | {"torch", "numpy"}


def folders() -> list[str]:
    return sorted(p.name for p in CLASS.iterdir() if p.is_dir() and not p.name.startswith("."))


def tables() -> list[list[list[str]]]:
    """Every Markdown table of the README, as rows of cells (header and rule dropped)."""
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*(CLASS / "README.md").read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif current:
            found.append(current[2:])
            current = []
    return found


def test_both_tables_have_one_row_per_submission_and_agree() -> None:
    expected_table, measured_table = tables()
    expected = {row[0].strip("`/"): row[-1] for row in expected_table}
    measured = {row[0]: row[1] for row in measured_table}
    assert sorted(expected) == folders()
    assert sorted(measured) == folders()
    assert measured == expected, "the measured verdicts are not the expected ones"


def test_nothing_in_the_class_is_a_link() -> None:
    links = [str(p.relative_to(CLASS)) for p in CLASS.rglob("*") if p.is_symlink()]
    assert not links, f"a class run refuses links: {links}"


@pytest.mark.parametrize("folder", folders())
def test_a_submission_imports_only_what_its_sandbox_holds(folder: str) -> None:
    own = {p.stem for p in (CLASS / folder).glob("*.py")}
    for path in sorted((CLASS / folder).glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if folder == REACHES:
                    assert top == "tinygpt", f"{path.name} imports {name}"
                elif top not in own and top not in ALLOWED:
                    missing_on_purpose = folder == "missing_helper" and top == "kv_cache_slots"
                    assert missing_on_purpose, f"{folder}/{path.name} imports {name}"
