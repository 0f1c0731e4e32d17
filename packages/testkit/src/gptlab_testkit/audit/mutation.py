"""Mutation testing: mutmut on a reference against its own contract tests, every survivor
accounted for.

    python -m gptlab_testkit.mutation p13            # one drill (any case: p13, PT17)
    python -m gptlab_testkit.mutation kv_cache       # a package: its reference modules
    python -m gptlab_testkit.mutation                # every drill, modern_lm and the six
    python -m gptlab_testkit.mutation --changed      # only targets whose stamp is stale (CI)

A target is a drill (its module `gptlab_drills.<id>` against `packages/drills/tests/<id>`),
`modern_lm`, or one of tinygpt, cache_aware_lm, kv_cache, prefix_cache, chunked_prefill,
speculative (every module of the package against its `tests/`). mutmut runs in a private
temporary copy (a generated `pyproject.toml` with `[tool.mutmut]`, the package's `src/` and
the target's tests), so several runs at once never share a `mutants/` folder and nothing is
written into the tree but the results: the table in `bench/mutation.json` and
`bench/mutation.md`, and the target's stamp when it passes. Only contract tests run
(`-m contract`); the reference is graded through its variable's default, the mutated copy
coming first on the import path.

Every mutant that no contract test kills (mutmut: survived, no tests, suspicious) is a
survivor. A survivor passes only when the target's accepted file lists it:
`packages/drills/mutation/<id>.toml` for a drill, `packages/<package>/mutation.toml`
otherwise. The format (TOML), one table per accepted survivor:

    [[survivor]]
    function = "causal_length_mask"        # the mutated function, or Class.method
    module = "kv_cache.cache"              # optional: the dotted module, where names repeat
    change = "-    if bad:\\n+    if not bad:"   # the mutant's changed lines, as printed
    class = "equivalent"                   # or "outside the contract",
                                           # or "not observable on this device"
    reason = "one line"

Entries are matched on (function, change) (and module when given), never on mutmut's
mutant numbers, so they survive renumbering. `class` says why the survivor is no missing
test: `equivalent` (no observable change), `outside the contract` (the reason quotes the
clause that leaves it open, or the `(not graded)` clause), `not observable on this device`
(the reason names the device where it would be). A survivor that changes what a graded
clause promises is a missing test, never an accepted line. For every unaccepted survivor
the run prints a ready-to-paste stub (class and reason left to fill in); an entry that
matches no survivor any more is stale. Either one fails the run (exit status 1), so the
lists stay short and true.

A package's accepted file may also leave whole modules out, each with its reason (a
module no contract test loads: a compiled path, an interop converter):

    [skip]
    "src/speculative/compiled.py" = "the compiled path: graded by nox -s compiled"

Code that runs only in processes the tests fork (P28's Gloo ranks) records no coverage
for mutmut: for a drill, a function that no test reaches in mutmut's coverage pass is
mapped, in mutmut's stats file, to every contract test of the drill, and its mutants run
again against all of them (a drill's suite takes seconds). A package's unreached function
stays "no tests": a survivor like any other.

Code that runs while the target is imported (a config built at module level, a test
module's constant) ran before mutmut switched any mutant on: its survivors never ran.
Each survivor of a function that runs during collection (`import_time`) is judged again
in a fresh interpreter with the mutant on from the first import; killed there, it is
killed, so no such mutant is accepted for want of being reached.

Stamps (CI): a target that passes writes `<accepted file stem>.stamp` beside its accepted
file, a digest of its mutated modules, its tests and its accepted file; `--changed` runs
only the targets whose digest differs, so an unchanged tree costs nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

MUTMUT_VERSION = "3.8.1"
SCHEME = "1"  # part of every stamp: a change to how targets run invalidates them all
PACKAGES = (
    "modern_lm",
    "tinygpt",
    "cache_aware_lm",
    "kv_cache",
    "prefix_cache",
    "chunked_prefill",
    "speculative",
    "moe_lm",
    "runtime_lm",
    "fragment_lm",
)
# Targets that are one module of a package (M03's advanced branch inside cache_aware_lm):
# {target: (package folder, module)}, with `mutation_<target>.toml` beside the package's own.
MODULE_TARGETS = {"cache_aware_modern": ("cache_aware_lm", "src/cache_aware_lm/advanced.py")}
CLASSES = ("equivalent", "outside the contract", "not observable on this device")
KILLED = {"killed", "timeout", "segfault", "caught by type check"}
SURVIVED = {"survived", "no tests", "suspicious"}
NO_TESTS_EXIT = 33  # mutmut's exit code for "no test reaches this mutant"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")


@dataclasses.dataclass(frozen=True)
class Target:
    """What one run mutates and which tests grade it (paths relative to `package`)."""

    name: str
    package: Path  # the package folder, e.g. packages/drills
    modules: tuple[str, ...]  # e.g. ("src/gptlab_drills/p05.py",)
    tests: str  # e.g. "tests/p05"
    accepted: Path  # the accepted-survivors file
    reach_all: bool = False  # unreached functions run against every test (drills)

    @property
    def stamp(self) -> Path:
        return self.accepted.with_suffix(".stamp")

    def digest(self) -> str:
        """Its mutated modules, tests and accepted file (plus the tool's version)."""
        digest = hashlib.sha256(f"{SCHEME} mutmut=={MUTMUT_VERSION}\0".encode())
        files = [self.package / m for m in self.modules]
        files += sorted(p for p in (self.package / self.tests).rglob("*") if _tracked(p))
        files += [self.accepted] if self.accepted.is_file() else []
        for path in files:
            digest.update(str(path.relative_to(self.package.parent)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
        return digest.hexdigest()


def _tracked(path: Path) -> bool:
    return path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"


# -- the targets


def all_targets(root: Path) -> dict[str, Target]:
    """Every target of the repository at `root`, by lower-case name."""
    found = {}
    lanes = [("drills", "p*"), ("kernels", "t*")]  # the repair lane, the Triton lane
    for lane, pattern in lanes:
        found.update(_lane_targets(root / "packages" / lane, pattern))
    for name in PACKAGES:
        package = root / "packages" / name
        source = package / "src" / name
        accepted = package / "mutation.toml"
        skipped = load_skipped(accepted)
        modules = sorted(str(p.relative_to(package)) for p in source.rglob("*.py") if _tracked(p))
        kept = tuple(m for m in modules if m not in skipped)
        found[name] = Target(name, package, kept, "tests", accepted)
    for name, (folder, module) in MODULE_TARGETS.items():
        package = root / "packages" / folder
        found[name] = Target(name, package, (module,), "tests", package / f"mutation_{name}.toml")
    return found


def _lane_targets(drills: Path, pattern: str) -> dict[str, Target]:
    """One target per drill (or kernel) of a lane package: its module against its tests."""
    found: dict[str, Target] = {}
    source = next((drills / "src").glob("gptlab_*"), drills / "src")
    for test_folder in sorted((drills / "tests").glob(pattern)):
        module = source / f"{test_folder.name}.py"
        if test_folder.is_dir() and module.is_file():
            name = test_folder.name
            found[name] = Target(
                name,
                drills,
                (str(module.relative_to(drills)),),
                f"tests/{name}",
                drills / "mutation" / f"{name}.toml",
                reach_all=True,
            )
    return found


def resolve(names: Sequence[str], root: Path) -> list[Target]:
    """The targets named (any case), or all of them; ValueError naming an unknown one."""
    targets = all_targets(root)
    if not names:
        return list(targets.values())
    unknown = [n for n in names if n.lower() not in targets]
    if unknown:
        raise ValueError(f"unknown target(s) {unknown}; known: {', '.join(targets)}")
    return [targets[n.lower()] for n in dict.fromkeys(names)]


# -- running mutmut in a private copy


def prepare(target: Target, work: Path) -> None:
    """A self-contained project in `work`: the package's src, the target's tests, config."""
    shutil.copytree(target.package / "src", work / "src", ignore=IGNORED)
    shutil.copytree(target.package / target.tests, work / target.tests, ignore=IGNORED)
    (work / "pyproject.toml").write_text(_config(target), encoding="utf-8")


def _config(target: Target) -> str:
    def strings(values: Iterable[str]) -> str:
        return "[" + ", ".join(json.dumps(v) for v in values) + "]"

    return "\n".join(
        [
            "[tool.mutmut]",
            'source_paths = ["src"]',
            f"only_mutate = {strings(target.modules)}",
            f"pytest_add_cli_args_test_selection = {strings([target.tests])}",
            'pytest_add_cli_args = ["-m", "contract", "-p", "no:cacheprovider"]',
            "use_git_change_detection = false",
            "",
            "[tool.pytest.ini_options]",
            *_pytest_settings(target.package.parent.parent),
            "",
        ]
    )


def _pytest_settings(root: Path) -> list[str]:
    """The repository's own pytest settings (the suite runs as it does there), but for
    where to look for tests: the copy holds only the target's."""
    path = root / "pyproject.toml"
    settings = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    ini = settings.get("tool", {}).get("pytest", {}).get("ini_options", {})
    return [
        f"{key} = {json.dumps(value)}"  # strings, lists of strings, booleans: JSON is TOML
        for key, value in ini.items()
        if key not in ("testpaths", "norecursedirs")
    ]


def _environment() -> dict[str, str]:
    """Every variable at its reference; one thread per process (two workers share 2 cores)."""
    from gptlab_testkit.candidates import VARIABLES

    env = {k: v for k, v in os.environ.items() if k not in VARIABLES and not k.startswith("DRILL_")}
    env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


MUTMUT = "import sys; from mutmut.__main__ import cli; sys.argv[0] = 'mutmut'; cli()"


def run_mutmut(work: Path, jobs: int, names: Sequence[str] = ()) -> tuple[int, str]:
    """(exit status, output) of `mutmut run` in `work`; names rerun those mutants."""
    command = [sys.executable, "-c", MUTMUT, "run", f"--max-children={jobs}", *names]
    done = subprocess.run(
        command, cwd=work, env=_environment(), capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout + done.stderr


class MutationError(RuntimeError):
    """mutmut could not grade a target (its clean run failed, or it stopped early)."""


def mutate(target: Target, work: Path, jobs: int) -> None:
    """Run mutmut on a prepared copy; reach forked code by mapping it to every test."""
    status, output = run_mutmut(work, jobs)
    no_coverage = "could not find any test case" in output
    if status and not no_coverage:
        raise MutationError(f"{target.name}: mutmut failed ({status}):\n{output[-3000:]}")
    unreached = _map_unreached(target, work) if target.reach_all else set()
    if status and not unreached:
        raise MutationError(f"{target.name}: no test reaches any mutant:\n{output[-3000:]}")
    if unreached:
        # Names select the mutants to rerun (ones already marked "no tests" included).
        status, output = run_mutmut(work, jobs, [f"{f}__mutmut_*" for f in sorted(unreached)])
        if status:
            raise MutationError(f"{target.name}: mutmut rerun failed ({status}):\n{output[-3000:]}")


def _map_unreached(target: Target, work: Path) -> set[str]:
    """Map every function no test reached to all of the target's tests, in mutmut's stats
    file; returns those functions (mangled names)."""
    stats_path = work / "mutants" / "mutmut-stats.json"
    stats: dict[str, Any] = (
        json.loads(stats_path.read_text(encoding="utf-8"))
        if stats_path.is_file()
        else {"tests_by_mangled_function_name": {}, "duration_by_test": {}, "stats_time": None}
    )
    reached = stats["tests_by_mangled_function_name"]
    functions = {
        key.partition("__mutmut_")[0]
        for module in target.modules
        for key in _meta(work, module)["exit_code_by_key"]
    }
    unreached = {f for f in functions if not reached.get(f)}
    if unreached:
        tests = sorted(stats["duration_by_test"]) or _collect(target, work)
        for function in unreached:
            reached[function] = tests
        stats_path.write_text(json.dumps(stats, indent=1), encoding="utf-8")
    return unreached


def _collect(target: Target, work: Path) -> list[str]:
    """The target's contract test ids, as mutmut names them (run from mutants/)."""
    mutants = work / "mutants"
    env = _environment() | {"PYTHONPATH": str(mutants / "src")}
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "--rootdir=."]
    command += ["-m", "contract", "-p", "no:cacheprovider", target.tests]
    done = subprocess.run(command, cwd=mutants, env=env, capture_output=True, text=True)
    tests = [line.strip() for line in done.stdout.splitlines() if "::" in line]
    if not tests:
        raise MutationError(f"{target.name}: no contract tests collected:\n{done.stdout[-2000:]}")
    return tests


def _meta(work: Path, module: str) -> dict[str, Any]:
    path = work / "mutants" / f"{module}.meta"
    if not path.is_file():
        return {"exit_code_by_key": {}}
    return dict(json.loads(path.read_text(encoding="utf-8")))


# -- reading the results


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's name, e.g. gptlab_drills.p05.x__check__mutmut_7
    module: str  # dotted, e.g. gptlab_drills.p05
    function: str  # e.g. _check, or KVCache.append
    status: str  # mutmut's: killed, survived, no tests, ...
    change: str  # the changed lines: "-old\n+new"

    @property
    def survived(self) -> bool:
        return self.status in SURVIVED


def read_mutants(target: Target, work: Path) -> list[Mutant]:
    """Every mutant of the target with its status and changed lines, in mutmut's order."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.format_utils import (
        get_module_from_key,
        mangled_name_from_mutant_name,
        orig_function_and_class_names_from_key,
    )

    found = []
    with contextlib.chdir(work):
        for module in target.modules:
            for name, code in _meta(work, module)["exit_code_by_key"].items():
                status = status_by_exit_code[code]
                if status == "not checked":
                    raise MutationError(f"{target.name}: mutant {name} was never run")
                function, cls = orig_function_and_class_names_from_key(name)
                diff = get_diff_for_mutant(name, path=module)
                found.append(
                    Mutant(
                        name=name,
                        module=get_module_from_key(mangled_name_from_mutant_name(name)),
                        function=f"{cls}.{function}" if cls else function,
                        status=status,
                        change=changed_lines(diff),
                    )
                )
    return found


def _judge_import_time(target: Target, work: Path, mutants: list[Mutant]) -> list[Mutant]:
    """Survivors in code that runs while the target is imported, judged again in a fresh
    interpreter (`import_time`): mutmut's per-test switch never reached them."""
    from gptlab_testkit.audit import import_time

    args = ["-m", "contract", "-p", "no:cacheprovider"]
    survivors = [(m.name, m.module, m.function) for m in mutants if m.survived]
    if not survivors:
        return mutants
    at_import = import_time.run_at_import(work, target.tests, _environment(), args)

    def judge(name: str) -> bool:
        return import_time.judge_afresh(work, target.tests, _environment(), args, name)

    killed = import_time.rejudge(survivors, at_import, judge)
    return [dataclasses.replace(m, status="killed") if m.name in killed else m for m in mutants]


def changed_lines(diff: str) -> str:
    """The '-' and '+' lines of a unified diff, without its file headers."""
    lines = diff.splitlines()
    kept = [
        line.rstrip() for line in lines if line[:1] in "-+" and not line.startswith(("---", "+++"))
    ]
    return "\n".join(kept)


# -- the accepted-survivors file


@dataclasses.dataclass(frozen=True)
class Accepted:
    function: str
    change: str
    kind: str  # the entry's `class`
    reason: str
    module: str = ""

    def matches(self, mutant: Mutant) -> bool:
        same_change = _normal(self.change) == _normal(mutant.change)
        same_module = not self.module or self.module == mutant.module
        return self.function == mutant.function and same_change and same_module


def _normal(change: str) -> str:
    return "\n".join(line.rstrip() for line in change.strip("\n").splitlines())


def load_skipped(path: Path) -> dict[str, str]:
    """{module path: reason} of an accepted file's [skip] table ({} when none)."""
    if not path.is_file():
        return {}
    skipped = tomllib.loads(path.read_text(encoding="utf-8")).get("skip", {})
    empty = [module for module, reason in skipped.items() if not str(reason).strip()]
    if empty:
        raise ValueError(f"{path}: [skip] {empty} needs a reason")
    return dict(skipped)


def load_accepted(path: Path) -> list[Accepted]:
    """The entries of an accepted file ([] when there is none); ValueError on a bad entry."""
    if not path.is_file():
        return []
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("survivor", [])
    found = []
    for number, entry in enumerate(entries, start=1):
        where = f"{path}: survivor #{number}"
        missing = [k for k in ("function", "change", "class", "reason") if not entry.get(k)]
        if missing:
            raise ValueError(f"{where}: missing {', '.join(missing)}")
        if entry["class"] not in CLASSES:
            raise ValueError(f"{where}: class {entry['class']!r} is not one of {CLASSES}")
        if "\n" in entry["reason"].strip():
            raise ValueError(f"{where}: the reason is one line")
        found.append(
            Accepted(
                function=entry["function"],
                change=entry["change"],
                kind=entry["class"],
                reason=entry["reason"].strip(),
                module=entry.get("module", ""),
            )
        )
    return found


@dataclasses.dataclass
class Verdict:
    target: str
    mutants: int
    killed: int
    survivors: list[Mutant]
    unaccepted: list[Mutant]
    stale: list[Accepted]
    seconds: float = 0.0

    @property
    def accepted(self) -> int:
        return len(self.survivors) - len(self.unaccepted)

    @property
    def passed(self) -> bool:
        return not self.unaccepted and not self.stale

    @property
    def score(self) -> float:
        return self.killed / self.mutants if self.mutants else 1.0

    def row(self) -> dict[str, Any]:
        return {
            "mutants": self.mutants,
            "killed": self.killed,
            "survived": len(self.survivors),
            "accepted": self.accepted,
            "score": round(self.score, 3),
            "seconds": round(self.seconds, 1),
        }


def account(name: str, mutants: Sequence[Mutant], entries: Sequence[Accepted]) -> Verdict:
    """Which survivors an accepted file covers, which it does not, and its stale entries."""
    survivors = [m for m in mutants if m.survived]
    unaccepted = [m for m in survivors if not any(e.matches(m) for e in entries)]
    stale = [e for e in entries if not any(e.matches(m) for m in survivors)]
    killed = sum(m.status in KILLED for m in mutants)
    return Verdict(name, len(mutants), killed, survivors, unaccepted, stale)


def stub(mutant: Mutant, with_module: bool = False) -> str:
    """A ready-to-paste [[survivor]] entry for an unaccepted survivor."""
    lines = ["[[survivor]]", f"function = {_toml(mutant.function)}"]
    if with_module:
        lines.append(f"module = {_toml(mutant.module)}")
    lines += [
        f"change = {_toml(mutant.change)}",
        f'class = "?"  # {mutant.status}; one of: {", ".join(CLASSES)}',
        'reason = "?"',
    ]
    return "\n".join(lines)


def _toml(text: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML ones)."""
    return json.dumps(text, ensure_ascii=False)


# -- one target, end to end


def run_target(target: Target, jobs: int, keep: Path | None = None) -> Verdict:
    """Mutate the target in a private copy and account for every survivor."""
    entries = load_accepted(target.accepted)  # a malformed file fails before the run
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"gptlab-mutation-{target.name}-") as scratch:
        work = Path(scratch)
        prepare(target, work)
        mutate(target, work, jobs)
        mutants = _judge_import_time(target, work, read_mutants(target, work))
        if keep is not None:
            shutil.copytree(work, keep / target.name, dirs_exist_ok=True)
    verdict = account(target.name, mutants, entries)
    verdict.seconds = time.monotonic() - start
    return verdict


def report(verdict: Verdict, target: Target) -> str:
    """What a failing target needs: a stub per unaccepted survivor, each stale entry."""
    lines = []
    several = len({m.module for m in verdict.survivors}) > 1 or len(target.modules) > 1
    if verdict.unaccepted:
        lines.append(
            f"{target.name}: {len(verdict.unaccepted)} unaccepted survivor(s): a test, or an "
            f"entry in {target.accepted}:"
        )
        lines += ["", *(stub(m, several) + "\n" for m in verdict.unaccepted)]
    for entry in verdict.stale:
        first = entry.change.splitlines()[0] if entry.change else ""
        lines.append(
            f"{target.name}: stale entry in {target.accepted} (no such survivor now): "
            f"{entry.function}: {first}"
        )
    return "\n".join(lines)


# -- the table and bench/


HEADER = "| target | mutants | killed | survived | accepted | score | seconds |"


def table(rows: dict[str, dict[str, Any]]) -> str:
    lines = [HEADER, "|---|---:|---:|---:|---:|---:|---:|"]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['mutants']} | {row['killed']} | {row['survived']} | "
            f"{row['accepted']} | {row['score']:.0%} | {row['seconds']:.0f} |"
        )
    return "\n".join(lines)


def record(root: Path, verdicts: Sequence[Verdict], before: bool) -> Path:
    """Merge these rows into bench/mutation.json (`after`; `before` when first seen or
    asked) and re-render bench/mutation.md; a lock keeps concurrent runs from racing."""
    import fcntl

    bench = root / "bench"
    path = bench / "mutation.json"
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    with open(bench / ".mutation.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        targets = data.setdefault("targets", {})
        for verdict in verdicts:
            row = verdict.row() | {"date": stamp, "load": _load()}
            entry = targets.setdefault(verdict.target, {})
            if before or "before" not in entry:
                entry["before"] = row
            entry["after"] = row
        data["targets"] = dict(sorted(targets.items(), key=lambda kv: _order(kv[0])))
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        (bench / "mutation.md").write_text(render(data), encoding="utf-8")
    return path


def _order(name: str) -> tuple[int, str]:
    return (1, name) if name in PACKAGES else (0, name)


def _load() -> float:
    return round(os.getloadavg()[0], 1)


def render(data: dict[str, Any]) -> str:
    """bench/mutation.md: before and after per target, with the date of each."""
    lines = [
        "# Mutation testing (`nox -s mutation`, `python -m gptlab_testkit.mutation`)",
        "",
        f"mutmut {MUTMUT_VERSION} on each reference against its own contract tests "
        "(`-m contract`). killed counts timeouts too; score = killed / mutants; survivors "
        "are passed only when the target's accepted file gives each a reason (equivalent, "
        "outside the contract, not observable on this device). Before: the first recorded "
        "run; after: the latest. Seconds are wall time on the machine it ran on (load: "
        "1-minute load average at the end).",
        "",
        "| target | before: mutants / killed / survived / accepted / score | date | "
        "after: mutants / killed / survived / accepted / score | seconds | load | date |",
        "|---|---|---|---|---:|---:|---|",
    ]
    for name, entry in data.get("targets", {}).items():
        b, a = entry["before"], entry["after"]
        lines.append(
            f"| {name} | {_cells(b)} | {b['date']} | {_cells(a)} | {a['seconds']:.0f} | "
            f"{a.get('load', '')} | {a['date']} |"
        )
    return "\n".join(lines) + "\n"


def _cells(row: dict[str, Any]) -> str:
    fields = (row["mutants"], row["killed"], row["survived"], row["accepted"])
    return " / ".join(map(str, fields)) + f" / {row['score']:.0%}"


# -- command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gptlab_testkit.mutation", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("targets", nargs="*", help="drill ids, modern_lm, package names; none: all")
    parser.add_argument("--changed", action="store_true", help="only targets with a stale stamp")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutmut workers")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    parser.add_argument("--no-bench", action="store_true", help="do not write bench/mutation.*")
    parser.add_argument("--before", action="store_true", help="record this run as 'before'")
    parser.add_argument("--keep", type=Path, help="copy each run's mutmut folder here")
    parser.add_argument("--list", action="store_true", help="print the targets and stop")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        targets = resolve(args.targets, root)
    except ValueError as error:
        parser.error(str(error))
    if args.list:
        print("\n".join(f"{t.name}: {', '.join(t.modules)} <- {t.tests}" for t in targets))
        return 0
    if args.changed:
        opened = open_targets(root)
        closed = [t.name for t in targets if t.name in opened and not _stale(t)]
        if closed:  # the open list only shrinks: a target that passes leaves it
            print(f"mutation: {', '.join(closed)} passed: remove from {OPEN_FILE}")
            return 1
        waiting = sorted(t.name for t in targets if t.name in opened)
        targets = [t for t in targets if t.name not in opened and _stale(t)]
        if waiting:
            print(f"mutation: not yet accounted for ({OPEN_FILE}): {', '.join(waiting)}")
        print(f"mutation: {len(targets)} target(s) changed since their last pass")
    verdicts, failed = [], []
    for target in targets:
        print(f"mutation: {target.name} ...", flush=True)
        try:
            verdict = run_target(target, args.jobs, args.keep)
        except (MutationError, ValueError) as error:
            print(f"mutation: {error}")
            failed.append(target.name)
            continue
        verdicts.append(verdict)
        if verdict.passed:
            target.stamp.parent.mkdir(parents=True, exist_ok=True)
            target.stamp.write_text(target.digest() + "\n", encoding="utf-8")
        else:
            print(report(verdict, target))
            failed.append(target.name)
        print(table({verdict.target: verdict.row()}), flush=True)
    if verdicts:
        print("\n" + table({v.target: v.row() for v in verdicts}))
        if not args.no_bench and (root / "bench").is_dir():
            print(f"mutation: wrote {record(root, verdicts, args.before)}")
    if failed:
        print(f"mutation: FAILED: {', '.join(failed)}")
    return 1 if failed else 0


# Targets whose survivors are not all accounted for yet, each with why: `--changed` (CI)
# leaves them out and fails once one of them passes, so the list only shrinks. A target
# that is not listed and has no stamp (a new drill, a new build) runs, and must pass.
OPEN_FILE = "bench/mutation-open.toml"


def open_targets(root: Path) -> dict[str, str]:
    """target name -> why it is still open, from OPEN_FILE (none when the file is absent)."""
    path = root / OPEN_FILE
    if not path.is_file():
        return {}
    table_ = tomllib.loads(path.read_text(encoding="utf-8")).get("open", {})
    return {str(name): str(why) for name, why in table_.items()}


def _stale(target: Target) -> bool:
    recorded = target.stamp.read_text().strip() if target.stamp.is_file() else ""
    return recorded != target.digest()


def run() -> None:
    """The command."""
    sys.exit(main())
