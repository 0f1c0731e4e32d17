"""known_bad's stamps: a target is proved again only when what its verdict depends on changed.

A target is one package's or one drill's share of the ladder (an attempt folder graded on
several packages at once is a target of its own): its known-bad candidates, its faithful
candidates and its clause mutants. When all of them were graded in one run and every one
held (caught, passing, and the references passing every test that caught one), the
target gets a stamp, `<known-bad folder>/stamps/<target>.stamp`: a digest of

- its fixtures: the candidate files, the clause-mutant file, and every helper module or
  faithful stranger a fixture names by its file stem (a stranger-shaped known-bad
  candidate reads its stranger through `_strangers.py`);
- its suites: the folder of every test file its candidates are graded on (conftest,
  helpers, data) and every conftest.py above it;
- its references: the sources of the packages those suites test and the sibling packages
  they depend on (the integration slice tests every mechanism); in a package whose suite is
  split per target (the drills), the shared modules, the target's own and those it imports;
- the README clause lines it is checked against;
- the testkit's sources a verdict runs through (the suites' face, the judge and its
  worker, loading, the plugin and runners, this ladder: a change to any of them proves
  every target again), the pytest settings of pyproject.toml, torch's version and the
  options that decide a verdict. The grade and class commands and the other audits
  (cheats, mutation) are left out: no verdict of this ladder runs through them, and
  import-linter's contract "known_bad's verdicts run through neither the commands nor
  the other audits" (pyproject.toml, `nox -s lint`) keeps it so. The registration
  tables (the drills judged, the advisory clauses, the routing owners) enter with every
  drill's rows masked, and a drill's own rows as facts: adding a case leaves the other
  targets' stamps as they were.

A file enters the digest as its path relative to the repository root and its bytes (no
mtimes, no absolute paths), so a fresh clone reads the stamps its commit carries.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gptlab_testkit.candidates import (
    MECHANISM_VARIABLES,
    VARIABLE_BY_PACKAGE,
    VARIABLES,
    static_variables_of,
    suite_files,
)
from gptlab_testkit.clauses import Clause
from gptlab_testkit.running.suites import drill_suite_paths, suite_paths

# Part of every digest: a change to how targets are proved invalidates every stamp.
SCHEME = "1"
STAMPS_FOLDER = "stamps"
# Folders beside a suite's tests that hold another tool's fixtures, not the suite's files.
NOT_SUITE = frozenset({"known_bad", "faithful", "cheats", "clause_mutants", "__pycache__"})
TESTKIT_SOURCES = Path("packages") / "testkit" / "src"
# The testkit's files no verdict of this ladder runs through (relative to TESTKIT_SOURCES).
NOT_A_VERDICT_INPUT = (
    "gptlab_testkit/commands/",
    "gptlab_testkit/audit/cheats.py",
    "gptlab_testkit/audit/mutation.py",
    "gptlab_testkit/audit/import_time.py",
    "gptlab_testkit/grade.py",
    "gptlab_testkit/cheats.py",
    "gptlab_testkit/mutation.py",
)
# The registration tables: the drills judged, the advisory clauses, the routing owners, the
# drills' catalogue. One drill's row decides nothing about another's verdict, so every
# drill's rows are masked out of the digest (`masked`) and a target's own rows enter it as
# facts (`own_rows`): a case added beside it leaves its stamp as it was.
REGISTRATION_TABLES = (
    "packages/testkit/src/gptlab_testkit/judge/policy.py",
    "packages/testkit/src/gptlab_testkit/judge/advisory.py",
    "packages/testkit/src/gptlab_testkit/running/routing.toml",
    "packages/drills/src/gptlab_drills/catalogue.toml",
)
DRILL_ROWS = (
    re.compile(r'^\s*"(?:PT|P|T)\d\d\.\d+": .*\n', re.M),  # an advisory clause, one line
    re.compile(r"^\[(?:pt|p|t)\d\d\]\n(?:(?!\[).*\n)*", re.M | re.I),  # its owner, its row
    re.compile(r'"(?:DRILL_)?(?:PT|P|T)\d\d(?:_MODULE)?",?\s*'),  # a drill in a judged list
)
BLOCK_START = re.compile(r"^(?:\[(\w+)\]|([A-Z_]+)\b[^=\n]*=)", re.M)
# A sibling requirement in a package's pyproject.toml: "gptlab-x @ {root:parent:uri}/x".
SIBLING = re.compile(r"\{root:parent:uri\}/(?P<folder>[\w.-]+)")


@dataclass(frozen=True)
class Target:
    """One share of the ladder and what its verdict depends on."""

    name: str
    kind: str  # "drill", "package" or "attempt folder": how the skipped line counts it
    stamp: Path
    inputs: frozenset[Path]
    facts: tuple[str, ...]  # what is not a file: torch's version, options, clause lines

    def digest(self, root: Path) -> str:
        digest = hashlib.sha256(f"known_bad stamp scheme {SCHEME}\0".encode())
        for fact in self.facts:
            digest.update(fact.encode() + b"\0")
        for name, path in sorted((relative_name(path, root), path) for path in self.inputs):
            digest.update(name.encode() + b"\0")
            data = path.read_bytes() if path.is_file() else b"(missing)"
            digest.update((masked(data) if name in REGISTRATION_TABLES else data) + b"\0")
        return digest.hexdigest()

    def recorded(self) -> str:
        return self.stamp.read_text(encoding="utf-8").strip() if self.stamp.is_file() else ""

    def fresh(self, root: Path) -> bool:
        """Stamped, and nothing it depends on changed since (a stale stamp never counts)."""
        recorded = self.recorded()
        return bool(recorded) and recorded == self.digest(root)


@dataclass(frozen=True)
class Member:
    """One candidate as a stamp sees it."""

    target: str  # the package or drill it proves (an attempt folder of several: its name)
    fixture: Path  # its file (a clause mutant's .toml; an attempt folder)
    variables: tuple[str, ...]  # what it is swapped in as: its graded test files follow
    in_known_bad_folder: bool  # a bad_*.py file: its folder keeps the target's stamp


def masked(table: bytes) -> bytes:
    """A registration table without any drill's rows (each target adds its own as facts)."""
    text = table.decode("utf-8")
    for rows in DRILL_ROWS:
        text = rows.sub("", text)
    return text.encode("utf-8")


def own_rows(root: Path, name: str) -> tuple[str, ...]:
    """A drill target's rows of the registration tables, which `masked` leaves out: its
    routing owner, its advisory clauses, the judged lists naming it."""
    key = name.upper()
    rows = []
    for table in REGISTRATION_TABLES:
        path = root / table
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        own_block = rf"^\[(?:{name}|{key})\]\n(?:(?!\[).*\n)*"  # its owner, its catalogue row
        rows += [m.group(0) for m in re.finditer(own_block, text, re.M)]
        rows += re.findall(rf'^\s*"{key}\.\d+": .*$', text, re.M)
        for listed in re.finditer(rf'"(?:DRILL_)?{key}(?:_MODULE)?"', text):
            starts = BLOCK_START.findall(text, 0, listed.start())  # the table or owner naming it
            block = next((b for b in reversed(starts) if any(b)), ("?", ""))
            rows.append(f"{table}: {block[0] or block[1]} lists {listed.group(0)}")
    return tuple(rows)


def write_stamp(target: Target, digest: str) -> None:
    target.stamp.parent.mkdir(parents=True, exist_ok=True)
    target.stamp.write_text(digest + "\n", encoding="utf-8")


def relative_name(path: Path, root: Path) -> str:
    """A path as the digest names it: relative to the root, in POSIX form."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()


def files_under(folder: Path, skip: Iterable[str] = ("__pycache__",)) -> set[Path]:
    """Every file below `folder`, leaving out folders named in `skip`, hidden ones and .pyc."""
    skipped = set(skip)
    return {
        path
        for path in folder.rglob("*")
        if path.is_file()
        and path.suffix != ".pyc"
        and not skipped & set(path.relative_to(folder).parts[:-1])
        and not any(part.startswith(".") for part in path.relative_to(folder).parts)
    }


# -- the suites


def suite_inputs(root: Path, test_files: Iterable[Path]) -> set[Path]:
    """The folder of each test file (its neighbours: conftest, helpers, data) and every
    conftest.py above it up to the root."""
    inputs: set[Path] = set()
    base = Path(os.path.abspath(root))
    for folder in {Path(os.path.abspath(file)).parent for file in test_files}:
        inputs |= files_under(folder, NOT_SUITE)
        for above in (folder, *folder.parents):
            if not above.is_relative_to(base):
                break
            if (above / "conftest.py").is_file():
                inputs.add(above / "conftest.py")
    return inputs


def pytest_settings(root: Path) -> str:
    """The root pyproject.toml's pytest table (its other tools' settings decide no verdict)."""
    path = root / "pyproject.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return "pytest " + json.dumps(data.get("tool", {}).get("pytest", {}), sort_keys=True)


# -- the references


def tested_packages(
    root: Path, test_files: Iterable[Path], slice_packages: Iterable[str]
) -> set[str]:
    """The packages (folders under packages/) whose code the test files run: a package's
    suite its own, the integration slice every mechanism."""
    names: set[str] = set()
    for file in test_files:
        parts = tuple(relative_name(file, root).split("/"))
        if parts[:1] == ("packages",) and len(parts) > 2:
            names.add(parts[1])
        elif parts[:1] == ("integration_tests",):
            names |= set(slice_packages)
    return names


def with_siblings(root: Path, names: Iterable[str]) -> set[str]:
    """The packages and every sibling package they require, transitively."""
    found: set[str] = set()
    waiting = list(names)
    while waiting:
        name = waiting.pop()
        pyproject = root / "packages" / name / "pyproject.toml"
        if name in found or not pyproject.is_file():
            continue
        found.add(name)
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        for requirement in project.get("dependencies", []):
            match = SIBLING.search(requirement)
            if match:
                waiting.append(match["folder"])
    return found


def split_keys(package: Path) -> set[str]:
    """Targets of a package whose suite is split per target (tests/<key>/ beside a module
    named <key>: the drills); empty for a package with one suite."""
    modules = {path.stem for path in (package / "src").glob("*/*.py")}
    tests = package / "tests"
    return (
        {path.name for path in tests.iterdir() if path.is_dir() and path.name in modules}
        if tests.is_dir()
        else set()
    )


def _owner(path: Path, keys: set[str]) -> str:
    """The key a source file belongs to (`p20.py`, `test_pt06_start.py`), else ""."""
    return next((token for token in path.stem.split("_") if token in keys), "")


def _imported_keys(path: Path, keys: set[str]) -> set[str]:
    """Keys a Python file imports (`from .p09 import f`, `from gptlab_drills import p10`)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= set((node.module or "").split("."))
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {part for alias in node.names for part in alias.name.split(".")}
    return names & keys


def package_sources(package: Path, wanted: set[str], suite_files: Iterable[Path]) -> set[Path]:
    """A package's sources; in a split package, the shared files and those of the wanted
    keys and of every key they (or the suite files) import."""
    sources = files_under(package / "src")
    keys = split_keys(package)
    if not keys:
        return sources
    wanted = set(wanted) & keys
    for file in suite_files:
        wanted |= _imported_keys(Path(file), keys)
    waiting = list(wanted)
    while waiting:
        key = waiting.pop()
        for path in sources:
            if path.suffix == ".py" and _owner(path, keys) == key:
                for new in _imported_keys(path, keys) - wanted:
                    wanted.add(new)
                    waiting.append(new)
    return {path for path in sources if _owner(path, keys) in wanted | {""}}


def reference_inputs(
    root: Path, own: str, test_files: Iterable[Path], slice_packages: Iterable[str]
) -> set[Path]:
    """The sources of every package the target's tests run, its own package's too
    (`own`: the target, a package or a drill)."""
    files = [Path(file) for file in test_files]
    tested = tested_packages(root, files, slice_packages) | {package_folder_of(root, own)}
    packages = with_siblings(root, tested)
    # The split package's keys the target's suites belong to: packages/drills/tests/<key>/.
    wanted = {file.parent.name for file in files} | {own}
    inputs: set[Path] = set()
    for name in packages:
        inputs |= package_sources(root / "packages" / name, wanted, files)
    return inputs


def package_folder_of(root: Path, package: str) -> str:
    """The folder under packages/ that holds `package` (a drill's: drills)."""
    if (root / "packages" / package).is_dir():
        return package
    holders = [path.parent.parent.name for path in (root / "packages").glob(f"*/tests/{package}")]
    return holders[0] if holders else package


# -- the fixtures


def named_fixtures(fixtures: Iterable[Path], pool: Iterable[Path]) -> set[Path]:
    """The fixtures, and every pool entry (a helper module, a faithful file or folder) whose
    file stem one of them names, transitively (a stranger-shaped candidate's stranger)."""
    entries = {path.stem: path for path in pool}
    if not entries:
        return {file for path in fixtures for file in _files_of(Path(path))}
    stems = "|".join(re.escape(stem) for stem in sorted(entries, key=len, reverse=True))
    naming = re.compile(rf"(?<!\w)(?:{stems})(?!\w)")
    found: set[Path] = set()
    waiting = [Path(path) for path in fixtures]
    while waiting:
        for file in _files_of(waiting.pop()) - found:
            found.add(file)
            if file.suffix in (".py", ".toml"):
                named = {entries[stem] for stem in naming.findall(file.read_text("utf-8"))}
                waiting += [entry for entry in named if not _files_of(entry) <= found]
    return found


def _files_of(path: Path) -> set[Path]:
    return files_under(path) if path.is_dir() else {path}


def fixture_pool(known_bad_folders: Iterable[Path], faithful_folders: Iterable[Path]) -> list[Path]:
    """What a fixture may read: the known-bad folders' helper modules (`_strangers.py`) and
    the faithful candidates (files and attempt folders)."""
    pool = [path for folder in known_bad_folders for path in sorted(folder.glob("_*.py"))]
    for folder in faithful_folders:
        pool += sorted(folder.glob("good_*.py"))
        pool += sorted(
            p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
        )
    return pool


def common_inputs(root: Path) -> set[Path]:
    """What every target depends on: the testkit's sources a verdict runs through (the
    face, the judge and its worker, loading, the plugin, this ladder)."""
    sources = root / TESTKIT_SOURCES
    return {
        path
        for path in files_under(sources)
        if not path.relative_to(sources).as_posix().startswith(NOT_A_VERDICT_INPUT)
    }


def skipped_line(targets: Iterable[Target]) -> str:
    """'proved, unchanged since: 31 drills, 9 packages' for the targets not graded again."""
    counts: dict[str, int] = {}
    for target in targets:
        counts[target.kind] = counts.get(target.kind, 0) + 1
    kinds = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(counts.items()))
    return f"proved, unchanged since their stamps: {kinds}"


# -- the targets


def ladder_targets(
    root: Path,
    members: list[Member],
    folders: list[Path],
    faithful_folders: list[Path],
    facts: tuple[str, ...],
    clauses: dict[str, Clause],
) -> dict[str, Target]:
    """Every target the members prove, with what its verdict depends on."""
    grouped: dict[str, list[Member]] = {}
    for member in members:
        grouped.setdefault(member.target, []).append(member)
    pool = fixture_pool(folders, faithful_folders)
    common = common_inputs(root)
    slice_packages = {VARIABLES[name].package for name in MECHANISM_VARIABLES}
    graded_files = graded_test_files(root)
    targets = {}
    for name, mine in sorted(grouped.items()):
        test_files = {f for m in mine for v in m.variables for f in graded_files.get(v, set())}
        inputs = common | named_fixtures({member.fixture for member in mine}, pool)
        inputs |= suite_inputs(root, test_files)
        inputs |= reference_inputs(root, name, test_files, slice_packages)
        lines = tuple(
            f"clause {c.id} ({c.kind}) {c.text}"
            for c in sorted(clauses.values(), key=lambda c: c.id)
            if clause_target(c) == name
        )
        stamp = _home(mine, folders) / STAMPS_FOLDER / f"{name}.stamp"
        own = own_rows(root, name)
        targets[name] = Target(name, _kind(name), stamp, frozenset(inputs), (*facts, *lines, *own))
    return targets


def graded_test_files(root: Path) -> dict[str, set[Path]]:
    """{variable: the test files a candidate for it is graded on}, read in one pass: every
    file grade's selection could pick for it (a few more at most: another drill's suite
    file that names it), which is what a digest needs."""
    paths = suite_paths(root) + drill_suite_paths(root, sorted(VARIABLES))
    found: dict[str, set[Path]] = {}
    for file in suite_files(paths):
        for variable in static_variables_of(file):
            found.setdefault(variable, set()).add(file)
    return found


def clause_target(clause: Clause) -> str:
    """The target a README clause belongs to: P20.3's the drill p20, M02.7's modern_lm."""
    item = clause.item.lower()
    for package, variable in VARIABLE_BY_PACKAGE.items():
        if item == package or item in variable.stems:
            return package
    return item


def verdict_facts(root: Path, judge: str, min_catches: int, floor: str) -> tuple[str, ...]:
    """What decides a verdict besides files: torch, the pytest settings, the options."""
    import torch

    return (
        f"torch {torch.__version__}",
        pytest_settings(root),
        f"judge {judge}, min-catches {min_catches}, floor {floor}",
    )


def _kind(name: str) -> str:
    variable = VARIABLE_BY_PACKAGE.get(name)
    if variable is None:
        return "attempt folder"
    return "drill" if variable.is_drill else "package"


def _home(members: list[Member], folders: list[Path]) -> Path:
    """The known-bad folder that keeps the target's stamp: the one holding its known-bad
    file, else the one beside its faithful or clause-mutant folder."""
    for member in members:
        if member.in_known_bad_folder and member.fixture.parent in folders:
            return member.fixture.parent
    for member in members:
        grand = member.fixture.resolve().parent.parent
        beside = [folder for folder in folders if folder.resolve().parent == grand]
        if beside:
            return beside[0]
    return folders[0]
