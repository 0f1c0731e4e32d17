"""The practice stages of every mechanism, read from stages.toml (kept once, as data).

A stage's selection is a list of entries; an entry is a conjunction of atoms over
one contract test's identity (tier marks, owner, file, function name, package).
Stage k selects what any entry of stages 1..k matches, so stages only grow.

Beside the mechanisms, every drill of gptlab_drills' catalogue and (where gptlab-kernels
is installed) every Triton-lane kernel of its catalogue is a one-stage unit; both
catalogues are plain data, so reading them imports neither torch nor triton.
"""

from __future__ import annotations

import importlib
import importlib.util
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath
from typing import Any, Protocol

from gptlab_drills.catalogue import DRILLS, Drill

KERNELS_PACKAGE = "gptlab_kernels"  # the Triton lane (T01-T08), an optional install


class DrillItem(Protocol):
    """What practice reads of a one-stage item: a drill (gptlab_drills) or a kernel
    (gptlab_kernels), each graded through its own variable by its own suite."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def minutes(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def graded(self) -> tuple[str, ...]: ...
    @property
    def stems(self) -> tuple[str, ...]: ...
    @property
    def probes(self) -> tuple[str, ...]: ...
    @property
    def owner(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def variable(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def suite(self) -> str: ...


@dataclass(frozen=True)
class TestIdentity:
    """What a selection may look at: one test's package, file, name, owner and tier marks."""

    package: str
    file: str  # the test file's stem
    name: str  # the test function's name, without parameters
    owner: str
    marks: frozenset[str]

    __test__ = False  # not a pytest test class

    @classmethod
    def from_nodeid(
        cls, nodeid: str, package: str, owner: str, tiers: tuple[str, ...]
    ) -> TestIdentity:
        path, *rest = nodeid.split("::")
        name = rest[-1].split("[", 1)[0] if rest else ""
        return cls(package, PurePosixPath(path).stem, name, owner, frozenset(tiers))


@dataclass(frozen=True)
class Atom:
    kind: str  # "mark", "owner", "file", "test" or "package"
    value: str
    negated: bool = False

    def matches(self, test: TestIdentity) -> bool:
        found = {
            "mark": self.value in test.marks,
            "owner": test.owner == self.value,
            "file": test.file == self.value,
            "test": test.name == self.value,
            "package": test.package == self.value,
        }[self.kind]
        return found != self.negated


@dataclass(frozen=True)
class Entry:
    """A space-separated conjunction of atoms, as written in stages.toml."""

    text: str
    atoms: tuple[Atom, ...]
    package: str  # the suite folder the entry selects from; "" for the unit's own

    @classmethod
    def parse(cls, text: str, own_package: str) -> Entry:
        atoms = tuple(_atom(word, text) for word in text.split())
        if not atoms:
            raise ValueError(f"empty selection entry in stages.toml ({own_package})")
        packages = [a.value for a in atoms if a.kind == "package" and not a.negated]
        return cls(text, atoms, packages[0] if packages else "")

    def folder(self, own_folder: str) -> str:
        return self.package or own_folder

    def matches(self, test: TestIdentity, own_folder: str) -> bool:
        """Does the test, collected from `packages/<folder>/tests`, match every atom?"""
        in_folder = test.package == self.folder(own_folder)
        return in_folder and all(atom.matches(test) for atom in self.atoms)


_KINDS = ("owner", "file", "test", "package")
TIER_MARKS = frozenset({"tier0", "tier1", "tier2", "tier3"})  # the only marks an atom may name


def _atom(word: str, entry: str) -> Atom:
    negated = word.startswith("!")
    body = word.removeprefix("!")
    kind, sep, value = body.partition(":")
    if not sep:
        kind, value = "mark", body
    if kind not in ("mark", *_KINDS) or not value or (kind == "mark" and value not in TIER_MARKS):
        raise ValueError(f"stages.toml: cannot read {word!r} in selection {entry!r}")
    return Atom(kind, value, negated)


@dataclass(frozen=True)
class Stage:
    number: int  # 1-based
    minutes: int
    build: str
    stop: str
    entries: tuple[Entry, ...]  # this stage's own entries (earlier stages' are added)

    @property
    def budget_s(self) -> float:
        return self.minutes * 60.0


@dataclass(frozen=True)
class Mechanism:
    """What a learner practises: a graded mechanism, a repair-lane drill (`drill` set), or
    a mechanism's named re-solve (`resolve_of` set: one stage, graded by that suite)."""

    package: str  # the name a learner types and the store's key: `tinygpt`, `P19`, `a:b`
    readme_section: str
    source: str
    stages: tuple[Stage, ...]
    drill: DrillItem | None = None  # a drill or a kernel: one stage, its whole contract suite
    resolve_of: str | None = None  # a named re-solve: the mechanism whose suite grades it
    resolves: tuple[Mechanism, ...] = ()  # a mechanism's named re-solves
    file_stem: str = ""  # the attempt file's stem when not the package (the seed's tiny_gpt)
    kit_name: str = ""  # the kit's id of a model build (`M02` for modern_lm), else ""

    @property
    def names(self) -> tuple[str, ...]:
        """What a learner may type for it: the key, its attempt file's stem, its kit name."""
        typed = (self.package, self.file_stem, self.kit_name)
        return tuple(dict.fromkeys(n for n in typed if n))

    @property
    def label(self) -> str:
        """How lists name it: `M02 modern_lm` for a model build, else the key."""
        return f"{self.kit_name} {self.package}" if self.kit_name else self.package

    @property
    def suite(self) -> str:
        """The package whose suite and variable grade the attempt (its own, or its parent's)."""
        return self.resolve_of or self.package

    @property
    def folder(self) -> str:
        """The package folder holding that suite: its variable's (`cache_aware_modern` is
        graded by `packages/cache_aware_lm/tests`), else the package's own."""
        return suite_folder(self.suite)

    def stage(self, number: int) -> Stage:
        return self.stages[number - 1]

    def entries_through(self, number: int) -> tuple[Entry, ...]:
        return tuple(entry for stage in self.stages[:number] for entry in stage.entries)

    def selects(self, number: int, test: TestIdentity) -> bool:
        """Is the test part of stage `number`'s stop condition (its entries or earlier ones)?"""
        if self.drill is not None:  # a drill's run holds only its own suite
            return True
        return any(entry.matches(test, self.folder) for entry in self.entries_through(number))

    def suites_through(self, number: int) -> tuple[str, ...]:
        """The test folders (relative to the checkout) stage `number` draws from, own first."""
        if self.drill is not None:
            return (self.drill.suite,)
        return tuple(f"packages/{name}/tests" for name in self.packages_through(number))

    def packages_through(self, number: int) -> tuple[str, ...]:
        """The package folders stage `number` draws tests from, the mechanism's own first."""
        found = [self.folder]
        for entry in self.entries_through(number):
            if entry.folder(self.folder) not in found:
                found.append(entry.folder(self.folder))
        return tuple(found)

    @property
    def total_minutes(self) -> int:
        return sum(stage.minutes for stage in self.stages)


@cache
def suite_folder(package: str) -> str:
    """The package folder whose tests grade `package`: its variable's suite folder
    (`packages/<folder>/tests`), else `package` itself. Read only when a unit is checked or
    selected, so naming a unit never loads the testkit."""
    from gptlab_testkit import VARIABLES

    for variable in VARIABLES.values():
        if variable.package == package and not variable.is_drill:
            return PurePosixPath(variable.suite).parent.name
    return package


RESOLVE_SEPARATOR = ":"  # a named re-solve's key: `modern_lm:layer_reconstruction`


def _stage(number: int, row: dict[str, Any], package: str) -> Stage:
    return Stage(
        number=number,
        minutes=int(row["minutes"]),
        build=str(row["build"]),
        stop=str(row["stop"]),
        entries=tuple(Entry.parse(text, package) for text in row["select"]),
    )


def _resolve(parent: Mechanism, name: str, row: dict[str, Any]) -> Mechanism:
    """`[PACKAGE.resolves.NAME]`: one stage (minutes, build, stop, select) over PACKAGE's suite."""
    if not name.isidentifier():
        raise ValueError(f"stages.toml: {parent.package}.resolves.{name}: not an identifier")
    stage = _stage(1, row, parent.package)
    source = f"a named re-solve of {parent.package}"
    return Mechanism(
        f"{parent.package}{RESOLVE_SEPARATOR}{name}",
        parent.readme_section,
        str(row.get("source", source)),
        (stage,),
        resolve_of=parent.package,
        file_stem=f"{parent.file_stem or parent.package}_{name}",
    )


def _mechanism(package: str, table: dict[str, object]) -> Mechanism:
    rows = table.get("stages")
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"stages.toml: {package} has no stages")
    stages = tuple(_stage(index, row, package) for index, row in enumerate(rows, start=1))
    mechanism = Mechanism(
        package,
        str(table["readme_section"]),
        str(table["source"]),
        stages,
        file_stem=str(table.get("file_stem", "")),
        kit_name=str(table.get("kit_name", "")),
    )
    named = table.get("resolves", {})
    if not isinstance(named, dict):
        raise ValueError(f"stages.toml: {package}.resolves must be a table of named re-solves")
    found = tuple(_resolve(mechanism, name, row) for name, row in named.items())
    return replace(mechanism, resolves=found)


def parse_stages(text: str) -> dict[str, Mechanism]:
    data = tomllib.loads(text)
    return {package: _mechanism(package, table) for package, table in data.items()}


@cache
def mechanisms() -> dict[str, Mechanism]:
    """{package: Mechanism} in the order of stages.toml."""
    text = resources.files(__package__).joinpath("stages.toml").read_text(encoding="utf-8")
    return parse_stages(text)


def is_kernel(drill: DrillItem) -> bool:
    """A Triton-lane kernel (gptlab_kernels), not a repair-lane drill."""
    return drill.module.startswith(f"{KERNELS_PACKAGE}.")


def readme_of(drill: DrillItem) -> PurePosixPath:
    """The README stating its contract (`packages/drills/README.md`), relative to the checkout."""
    return PurePosixPath(drill.suite).parents[1] / "README.md"


def reference_of(drill: DrillItem) -> PurePosixPath:
    """Its reference module's file (`packages/drills/src/gptlab_drills/p19.py`)."""
    module = PurePosixPath(*drill.module.split("."))
    return PurePosixPath(drill.suite).parents[1] / "src" / f"{module}.py"


def starting_artifact(unit: Mechanism) -> Traversable | None:
    """A debug drill's supplied broken file; None for every other unit (kernels have none)."""
    return unit.drill.starting_artifact() if isinstance(unit.drill, Drill) else None


def drill_unit(drill: DrillItem) -> Mechanism:
    """A drill or a kernel as a practice unit: one stage, its time box, its whole suite."""
    start = {"debug": "its supplied broken artifact", "profile": "its supplied slow loop"}.get(
        drill.kind, "an empty file"
    )
    what = ", ".join(drill.graded)
    if is_kernel(drill):  # the kit asks every kernel for its ledger (the module's LEDGER)
        what += " (Triton kernel and launcher) and LEDGER"
    stage = Stage(
        number=1,
        minutes=drill.minutes,
        build=f"{drill.title}: {what} from {start}, with the kit's protocol",
        stop=f"every contract test of {drill.id} passes ({drill.suite})",
        entries=(),
    )
    kind = "Triton-lane kernel" if is_kernel(drill) else f"{drill.kind} drill"
    source = f"the kit's {kind} {drill.id}" + (
        f" (canonical owner {drill.owner})" if drill.owner else ""
    )
    return Mechanism(drill.id, "README", source, (stage,), drill, file_stem=drill.stems[0])


@cache
def kernels() -> dict[str, DrillItem]:
    """{id: kernel} of the Triton lane where gptlab-kernels is installed, else {}. Its
    catalogue module is data (the package imports neither torch nor triton)."""
    if importlib.util.find_spec(KERNELS_PACKAGE) is None:
        return {}
    catalogue = importlib.import_module(f"{KERNELS_PACKAGE}.catalogue")
    found: dict[str, DrillItem] = dict(catalogue.KERNELS)
    return found


@cache
def resolves() -> dict[str, Mechanism]:
    """{`package:name`: the named re-solve}, in the order of stages.toml."""
    return {r.package: r for m in mechanisms().values() for r in m.resolves}


@cache
def units() -> dict[str, Mechanism]:
    """Everything a learner can practise: each mechanism then its named re-solves, then
    every drill by its id, then every Triton-lane kernel (T01-T08) where installed."""
    graded = {u.package: u for m in mechanisms().values() for u in (m, *m.resolves)}
    one_stage = (*DRILLS.values(), *kernels().values())
    return {**graded, **{d.id: drill_unit(d) for d in one_stage}}


def unit_named(name: str) -> Mechanism | None:
    """The unit a learner means: its key (`tinygpt`), a drill or kernel id or a kit name in
    any case (`p19`, `t04`, `m02`), or its attempt file's stem (`tiny_gpt`); None if none."""
    known = units()
    if name in known or name.upper() in known:
        return known[name] if name in known else known[name.upper()]
    for unit in known.values():
        if name in unit.names or (unit.kit_name and name.upper() == unit.kit_name):
            return unit
    return None
