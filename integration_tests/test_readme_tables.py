"""The root README's tables name everything there is: every nox session, every package.

The sessions are read from the noxfile itself (executed against a stand-in `nox` module
that only records each `@nox.session` name, so nox need not be installed here); the
packages are the folders of `packages/` holding a `pyproject.toml`. A session or package
added without its README row fails here, naming it.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


class _StandInNox(types.ModuleType):
    """`nox` as far as a noxfile's import needs it: `session` records names."""

    def __init__(self) -> None:
        super().__init__("nox")
        self.names: list[str] = []
        self.on_demand: list[str] = []  # default=False: not part of plain `nox`
        self.Session = object
        self.options = types.SimpleNamespace()

    def session(self, *args: Any, **kwargs: Any) -> Any:
        def record(function: Callable[..., Any]) -> Callable[..., Any]:
            self.names.append(kwargs.get("name") or function.__name__)
            if kwargs.get("default") is False:
                self.on_demand.append(self.names[-1])
            return function

        if args and callable(args[0]):  # bare @nox.session
            return record(args[0])
        return record

    def __getattr__(self, name: str) -> Any:  # anything else a noxfile may touch
        return types.SimpleNamespace()


def nox_sessions() -> _StandInNox:
    stand_in = _StandInNox()
    saved = sys.modules.get("nox")
    sys.modules["nox"] = stand_in
    try:
        source = (ROOT / "noxfile.py").read_text(encoding="utf-8")
        namespace: dict[str, Any] = {"__file__": str(ROOT / "noxfile.py"), "__name__": "noxfile"}
        exec(compile(source, str(ROOT / "noxfile.py"), "exec"), namespace)
    finally:
        if saved is None:
            sys.modules.pop("nox", None)
        else:
            sys.modules["nox"] = saved
    return stand_in


def table_after(heading: str) -> list[list[str]]:
    """The rows (cells) of the first Markdown table under `heading`."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # past the header and its rule


def test_every_nox_session_is_in_the_session_table() -> None:
    sessions = nox_sessions().names
    assert {"grade", "testkit", "known_bad", "lint"} <= set(sessions), sessions  # read at all
    listed = {name for row in table_after("## Sessions") for name in re.findall(r"`(\w+)`", row[0])}
    missing = sorted(set(sessions) - listed)
    assert not missing, f"README.md's session table lacks {missing}"
    unknown = sorted(listed - set(sessions))
    assert not unknown, f"README.md's session table names sessions nox lacks: {unknown}"


def test_every_package_is_in_the_package_table() -> None:
    packages = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
    assert {"kv_cache", "testkit", "stdlib_pair"} <= set(packages)
    rows = table_after("## The packages")
    linked = {m for row in rows for m in re.findall(r"\(packages/(\w+)/README\.md\)", row[-1])}
    missing = [package for package in packages if package not in linked]
    assert not missing, f"README.md's package table lacks {missing}"


def test_the_sessions_plain_nox_leaves_out_are_named() -> None:
    text = README.read_text(encoding="utf-8")
    sentence = text.split("Plain `nox` runs every session above except", 1)[1].split(" (CI", 1)[0]
    sentence = sentence.replace("`tier0` ... `tier3`", "`tier0`, `tier1`, `tier2`, `tier3`")
    named = set(re.findall(r"`(\w+)`", sentence))
    on_demand = set(nox_sessions().on_demand)
    assert on_demand == named, (sorted(on_demand - named), sorted(named - on_demand))
