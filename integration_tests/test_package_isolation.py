"""Packages meet only through published names, and declare every sibling they import.

Static checks over the source tree (no imports): a package that reaches into a
sibling's private module, imports a name missing from the sibling's `__all__`, or
imports a sibling its pyproject does not declare, fails here before it fails a user.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

pytestmark = [pytest.mark.extension, pytest.mark.owner("package_isolation")]

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"
# import name -> package directory
IMPORT_NAMES = {
    "tinygpt": "tinygpt",
    "modern_lm": "modern_lm",
    "cache_aware_lm": "cache_aware_lm",
    "kv_cache": "kv_cache",
    "prefix_cache": "prefix_cache",
    "chunked_prefill": "chunked_prefill",
    "speculative": "speculative",
    "paged_kv": "paged_kv",
    "scheduler": "scheduler",
    "moe_lm": "moe_lm",
    "runtime_lm": "runtime_lm",
    "fragment_lm": "fragment_lm",
    "stdlib_pair": "stdlib_pair",
    "gptlab_testkit": "testkit",
    "gptlab_practice": "practice",
    "gptlab_drills": "drills",
    "arg_checks": "arg_checks",
    "gptlab_kernels": "kernels",
}
PACKAGE_DIRS = sorted(p.name for p in PACKAGES.iterdir() if (p / "pyproject.toml").is_file())


def _pyproject(package: str) -> dict:
    return tomllib.loads((PACKAGES / package / "pyproject.toml").read_text(encoding="utf-8"))


def _distribution(package: str) -> str:
    return str(_pyproject(package)["project"]["name"])


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;@]", requirement.strip(), maxsplit=1)[0].lower()


def _declared(package: str, *, extras: bool) -> dict[str, str]:
    """{distribution name: requirement} of a package's runtime (and optionally test) deps."""
    project = _pyproject(package)["project"]
    requirements = list(project.get("dependencies", []))
    if extras:
        for group in project.get("optional-dependencies", {}).values():
            requirements.extend(group)
    return {_requirement_name(r): r for r in requirements}


def _public_names(import_name: str) -> set[str]:
    init = PACKAGES / IMPORT_NAMES[import_name] / "src" / import_name / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return {elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)}  # type: ignore[attr-defined]
    raise AssertionError(f"{init} defines no __all__")


def _sibling_imports(path: Path) -> list[tuple[str, str | None, list[str], int]]:
    """(top-level package, submodule or None, imported names, line) for gptlab imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top, _, sub = alias.name.partition(".")
                if top in IMPORT_NAMES:
                    found.append((top, sub or None, [], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top, _, sub = node.module.partition(".")
            if top in IMPORT_NAMES:
                found.append((top, sub or None, [a.name for a in node.names], node.lineno))
    return found


def _files(package: str, part: str) -> list[Path]:
    return sorted((PACKAGES / package / part).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGE_DIRS)
def test_sources_import_siblings_only_through_public_names(package: str) -> None:
    own = next(name for name, folder in IMPORT_NAMES.items() if folder == package)
    problems = []
    for path in _files(package, "src"):
        for top, sub, names, line in _sibling_imports(path):
            if top == own:
                continue
            public = _public_names(top)
            where = f"{path.relative_to(ROOT)}:{line}"
            if sub is not None and sub.split(".")[0] not in public:
                problems.append(f"{where}: {top}.{sub} is not a public module of {top}")
            for name in names if sub is None else []:
                if name not in public:
                    problems.append(f"{where}: {top}.{name} is not in {top}.__all__")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", PACKAGE_DIRS)
def test_every_imported_sibling_is_declared(package: str) -> None:
    own = next(name for name, folder in IMPORT_NAMES.items() if folder == package)
    problems = []
    for part, extras in (("src", False), ("tests", True)):
        declared = _declared(package, extras=extras)
        for path in _files(package, part):
            for top, _, _, line in _sibling_imports(path):
                distribution = _distribution(IMPORT_NAMES[top])
                if top != own and distribution not in declared:
                    problems.append(
                        f"{path.relative_to(ROOT)}:{line} imports {top} but "
                        f"{package}/pyproject.toml does not declare {distribution}"
                        + (" (test extra)" if extras else "")
                    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", PACKAGE_DIRS)
def test_sibling_requirements_point_into_this_repository(package: str) -> None:
    siblings = {_distribution(p): p for p in PACKAGE_DIRS}
    for name, requirement in _declared(package, extras=True).items():
        if name in siblings:
            expected = f"{{root:parent:uri}}/{siblings[name]}"
            assert requirement.replace(" ", "").endswith("@" + expected), (
                f"{package}: {requirement!r} must be a direct reference '{name} @ {expected}'"
                " (siblings are never resolved from an index)"
            )


@pytest.mark.parametrize("package", [p for p in PACKAGE_DIRS if p != "testkit"])
def test_tests_reach_siblings_only_through_candidate_variables(package: str) -> None:
    """Suites grade whatever a variable selects: no direct import of a sibling runtime package."""
    own = next(name for name, folder in IMPORT_NAMES.items() if folder == package)
    problems = [
        f"{path.relative_to(ROOT)}:{line} imports {top} directly"
        for path in _files(package, "tests")
        for top, _, _, line in _sibling_imports(path)
        if top not in (own, "gptlab_testkit")
    ]
    assert not problems, "\n".join(problems)
