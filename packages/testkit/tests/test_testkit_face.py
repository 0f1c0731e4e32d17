"""Suites import the testkit's public face and nothing below it.

The face is the package itself and its top-level modules (the four command entries
aside); everything else lives in a sub-package (`judge`, `loading`, `running`,
`commands`, `audit`) or in the worker (`gptlab_worker`). Every import counts: at the top
of a file, inside a function, under TYPE_CHECKING. The README lists the face; a module
added at the top level without a line there fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gptlab_testkit
from gptlab_testkit.loading.variables import VARIABLES

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path(gptlab_testkit.__file__).parent
COMMANDS = {"grade", "known_bad", "cheats", "mutation"}  # `python -m gptlab_testkit.<name>`


def face_modules() -> set[str]:
    return {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"} - COMMANDS


def imports_of_the_testkit(source: str) -> list[str]:
    """Every module of the testkit or the worker that `source` imports, wherever in it:
    `gptlab_testkit.oracles` for `from gptlab_testkit.oracles import seeded`,
    `gptlab_testkit.judge` for `from gptlab_testkit import judge`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
            if node.module == "gptlab_testkit":
                found += [f"gptlab_testkit.{alias.name}" for alias in node.names]
    return [name for name in found if name.partition(".")[0] in {"gptlab_testkit", "gptlab_worker"}]


def beyond_the_face(source: str) -> list[str]:
    """The imports of `source` below the face (a name imported from the package is a
    module of the face or a name of its `__all__`)."""
    face = face_modules()
    public = set(gptlab_testkit.__all__)
    wrong = []
    for name in imports_of_the_testkit(source):
        parts = name.split(".")
        if parts == ["gptlab_testkit"]:
            continue
        if parts[0] == "gptlab_testkit" and len(parts) == 2 and parts[1] in face | public:
            continue
        wrong.append(name)
    return wrong


def suite_files() -> list[Path]:
    """Every Python file of every graded suite, and of integration_tests (grade runs it)."""
    folders = {ROOT / variable.suite for variable in VARIABLES.values()}
    folders.add(ROOT / "integration_tests")
    files = set()
    for folder in folders:
        files |= {
            path
            for path in folder.rglob("*.py")
            if not {"known_bad", "faithful", "__pycache__", "artifacts"} & set(path.parts)
        }
    return sorted(files)


def test_every_suite_imports_only_the_face():
    files = suite_files()
    assert len(files) > 100, f"only {len(files)} suite files found: the walk is broken"
    wrong = {
        str(path.relative_to(ROOT)): found
        for path in files
        if (found := beyond_the_face(path.read_text(encoding="utf-8")))
    }
    assert not wrong, f"suites reaching below the testkit's face: {wrong}"


@pytest.mark.parametrize(
    "source",
    [
        "from gptlab_testkit.judge.worker_facts import identity",
        "from gptlab_testkit import judge",
        "import gptlab_testkit.running.plugin",
        "def later():\n    from gptlab_worker import wire",
        "if TYPE_CHECKING:\n    from gptlab_testkit.loading import attempts",
    ],
)
def test_an_import_below_the_face_is_found_wherever_it_is(source):
    assert beyond_the_face(source), source


@pytest.mark.parametrize(
    "source",
    [
        "from gptlab_testkit import candidate, assert_close",
        "from gptlab_testkit.objects import assert_same_object",
        "from gptlab_testkit import slot_writes as checks",
        "import torch\nfrom gptlab_testkit.rank_pair import torch_beside",
    ],
)
def test_the_face_is_allowed(source):
    assert beyond_the_face(source) == []


def test_the_readme_lists_the_face_and_nothing_else():
    readme = (ROOT / "packages/testkit/README.md").read_text(encoding="utf-8")
    section = readme.split("## The suites' face", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- `gptlab_testkit\.(\w+)`", section, flags=re.MULTILINE))
    assert listed == face_modules()


def test_below_the_face_every_module_lives_in_a_sub_package_of_one_concern():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == {"audit", "commands", "judge", "loading", "running"}
    for command in COMMANDS:  # an entry of a few lines: the command lives below
        assert len((PACKAGE / f"{command}.py").read_text().splitlines()) < 10, command
