"""Every package README's first run works as written, and says how to run its tests.

A package README has a `## Use it alone` section: the plain commands (`pip install
"packages/<name>[test]"`, then pytest on its tests with `-m contract`, and with the
package's variable set to grade an attempt) and one python block that builds the thing,
calls it and prints a result. Each block runs here as it is, in this process (torch is
imported once; the global RNG is restored afterwards), in an empty working folder. A
printed line `False` fails it: the examples print their checks (`True`: the cache is
exact). The testkit and practice are tools with their own command tables, not a thing
to build, and keep them. The whole set runs in a few seconds (`EXAMPLE_BUDGET_S`).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import time
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.extension, pytest.mark.owner("package_isolation")]

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Use it alone"
TOOLS = {"testkit", "practice"}  # command tables of their own, no python first run
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
EXAMPLE_BUDGET_S = 20.0  # every example together, on a loaded 2-core machine


def packages() -> list[str]:
    return sorted(
        path.parent.name
        for path in (ROOT / "packages").glob("*/README.md")
        if path.parent.name not in TOOLS
    )


def usage_section(name: str) -> str:
    """The README's `## Use it alone` section, up to the next second-level heading."""
    text = (ROOT / "packages" / name / "README.md").read_text(encoding="utf-8")
    start = text.find(f"\n{HEADING}\n")
    assert start >= 0, f"packages/{name}/README.md has no '{HEADING}' section"
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def example(name: str) -> str:
    found = PYTHON_BLOCK.search(usage_section(name))
    assert found, f"packages/{name}/README.md: '{HEADING}' holds no ```python block"
    return found.group(1)


def run_example(name: str, folder: Path) -> str:
    """The block's printed output; it runs in `folder`, and the global RNG and the
    environment (an import may set a variable: Triton's interpreter) are left as they were."""
    code = compile(example(name), f"packages/{name}/README.md ({HEADING})", "exec")
    printed = io.StringIO()
    here, environment = Path.cwd(), dict(os.environ)
    os.chdir(folder)
    try:
        with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(printed):
            exec(code, {"__name__": "__readme_example__"})
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environment)
    return printed.getvalue()


@pytest.mark.parametrize("name", packages())
def test_the_readme_names_the_plain_install_and_test_commands(name):
    section = usage_section(name)

    assert f'pip install "packages/{name}[test]"' in section, section
    assert f"pytest packages/{name}/tests" in section, section
    assert "not in the wheel" in section, "say that the tests need a checkout"
    if "-m contract" in section:  # a package that grades candidates
        assert re.search(r"\b[A-Z0-9_]+_MODULE=\S+ pytest packages/", section), section
        assert "extension tests" in section, "say what -m contract leaves out"


@pytest.mark.parametrize("name", packages())
def test_the_readme_example_runs_as_written(name, tmp_path):
    printed = run_example(name, tmp_path)

    assert printed.strip(), f"packages/{name}/README.md: the example printed nothing"
    failed = [line for line in printed.splitlines() if line.strip() == "False"]
    assert not failed, f"packages/{name}/README.md: a check printed False:\n{printed}"
    assert not list(tmp_path.iterdir()), "the example left files in the working folder"


def test_every_example_together_is_quick(tmp_path):
    start = time.perf_counter()
    for name in packages():
        run_example(name, tmp_path)
    took = time.perf_counter() - start

    assert took < EXAMPLE_BUDGET_S, f"the README examples took {took:.1f} s"
