"""Who is judged, and what a candidate's worker may import, see and use.

Torch-free, so that grade and the pytest plugin answer "is this variable judged?" before
importing anything heavy. The worker's process itself is started by `client.Worker`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import resource
import sys
from pathlib import Path
from typing import Any

from gptlab_testkit.judge import sandbox
from gptlab_testkit.judge.defaults import JUDGE_VARIABLE

TRUSTED_VARIABLE = "GPTLAB_JUDGE_TRUSTED"
# The variables graded in judge mode by default: drills of functions over tensors, plain
# data and generators; P25, whose expert callables are lent (`lending`); the modules
# P14, P16, PT06 and PT08 (a handle: gradients cross the wire both ways, `remote_autograd`;
# parameter identity and pointers are worker-reported). The covered set is measured
# (`known_bad --judge`): faithful candidates pass, known-bad and clause mutants fail.
# P01's data pointers are read as the judge's addresses (`worker_facts.judge_address`);
# P17's module, the test's own, is lent as an nn.Module whose mode the candidate may switch
# (`lending.test_owned`); P27's functions travel as source, so torch.compile traces them in
# the worker (`shipping`). P28's ranks are forks of the judge, each with a worker of its
# own that joins the group and records the collectives (`ranks`: worker-reported).
JUDGED_DRILLS = (
    "P01", "P02", "P03", "P04", "P05", "P06", "P07", "P08", "P09", "P10", "P11", "P12", "P13",
    "P14", "P15", "P16", "P17", "P18", "P19", "P20", "P21", "P22", "P23", "P24", "P25", "P26",
    "P27", "P28", "PT01", "PT02", "PT03", "PT04", "PT05", "PT06", "PT07", "PT08", "PT09", "PT10",
    "PT11", "PT12", "PT13", "PT14", "PT15", "PT16", "PT17", "PT18", "PT19", "PT20", "PT21", "PT22",
    "PT23", "PT24", "PT25", "PT26", "PT27", "PT28", "PT29", "PT30", "PT31", "PT32", "PT33", "PT34",
    "PT35", "PT36", "PT37", "PT38", "PT39", "PT40",
    "T01", "T02", "T03", "T04", "T05", "T06", "T07", "T08",
)  # fmt: skip
# Every mechanism, the models among them: their objects are handles (a class of the
# candidate's module is a type of the judge's, `RemoteClass`, so dataclass configs and
# isinstance work), and the reference models and test recorders their tests hand them
# are lent (`lending`).
JUDGED_MECHANISMS = (
    "TINY_GPT_MODULE", "MODERN_LM_MODULE", "CACHE_AWARE_LM_MODULE",
    "KV_CACHE_MODULE", "PREFIX_CACHE_MODULE", "CHUNKED_PREFILL_MODULE",
    "SPECULATIVE_DECODING_MODULE", "PAGED_KV_MODULE", "SCHEDULER_MODULE",
    "MOE_LM_MODULE",  # M05: a block and an LM, handles like the models above
    "RUNTIME_LM_MODULE",  # M04: a model handle; its weight iterator is lent
    "FRAGMENT_LM_MODULE",  # M10: a model handle; the test's engine drives it
    "CACHE_AWARE_MODERN_MODULE",  # M03 advanced: a model handle, checked against M02 here
)  # fmt: skip
JUDGED: frozenset[str] = frozenset(
    {*(f"DRILL_{key}_MODULE" for key in JUDGED_DRILLS), *JUDGED_MECHANISMS}
)
REFUSED = (
    "gptlab_testkit", "gptlab_drills", "gptlab_practice", "pytest", "_pytest", "pluggy",
    "hypothesis", "_hypothesis_pytestplugin", "xdist", "pytest_timeout", "tinygpt", "modern_lm",
    "cache_aware_lm", "kv_cache", "prefix_cache", "chunked_prefill", "speculative", "paged_kv",
    "scheduler", "stdlib_pair", "tiny_gpt", "speculative_decoding", "conftest",
    "moe_lm", "gptlab_kernels", "runtime_lm", "fragment_lm",
)  # fmt: skip
MAX_SOURCE_BYTES = 4 * 1024 * 1024
# The variables whose workers keep the host's network: P28's ranks join a Gloo group whose
# rendezvous is a TCP store on loopback (every other worker has no network at all).
LOOPBACK_VARIABLES = frozenset(
    {"DRILL_P28_MODULE", "DRILL_PT38_MODULE", "DRILL_PT39_MODULE", "DRILL_PT40_MODULE"}
)


def judged(variable: str) -> bool:
    """Is this variable's candidate run in a worker? `GPTLAB_JUDGE`: `all` (every variable,
    `grade --judge`), `default` (the variables in JUDGED: grade's default), else none."""
    mode = os.environ.get(JUDGE_VARIABLE, "")
    if mode == "all":
        return True
    return mode == "default" and variable in JUDGED


def trusted() -> bool:
    """`GPTLAB_JUDGE_TRUSTED=1`: the candidates are this project's own fixtures (known_bad's,
    often the reference with one edit), so their worker may import the project's packages
    from the judge's import path. Only `known_bad` sets it; `grade` clears it."""
    return os.environ.get(TRUSTED_VARIABLE) == "1"


@functools.cache  # the installed metadata, read once per process (each worker start asks)
def siblings(variable: str) -> frozenset[str]:
    """This project's packages a candidate for `variable` may import: the runtime
    dependencies of its reference's distribution among them, transitively (the
    scheduler's `paged_kv` and `cache_aware_lm`, which brings `tinygpt` and `modern_lm`);
    never the reference itself, the testkit or the drills."""
    from importlib import metadata

    from gptlab_testkit.loading.variables import MECHANISM_VARIABLES, VARIABLES

    if variable not in MECHANISM_VARIABLES:
        return frozenset()
    own = VARIABLES[variable].default_module.partition(".")[0]  # M03 advanced: cache_aware_lm
    found: set[str] = set()
    frontier = [own]
    while frontier:
        package = frontier.pop()
        try:
            requirements = metadata.requires(f"gptlab-{package.replace('_', '-')}") or []
        except metadata.PackageNotFoundError:
            continue
        for requirement in requirements:
            name = requirement.split("@")[0].split(";")[0].strip()
            if ";" in requirement or not name.startswith("gptlab-"):
                continue  # an extra's (the tests') or a third party's
            dependency = name.removeprefix("gptlab-").replace("-", "_")
            if dependency not in found and dependency != own:
                found.add(dependency)
                frontier.append(dependency)
    return frozenset(found - {"testkit", "drills", "practice"})


def refused_modules(variable: str) -> tuple[str, ...]:
    if trusted():
        return ()
    allowed = siblings(variable)
    return tuple(name for name in REFUSED if name not in allowed)


def site_dirs(variable: str = "") -> list[str]:
    """Where torch (and numpy) are installed: the worker's only import roots; for a
    variable with siblings also where they and their third-party dependencies live (a
    trusted fixture's worker: the judge's whole import path)."""
    if trusted():
        return [entry for entry in sys.path if entry and Path(entry).is_dir()]
    from gptlab_testkit.loading.variables import VARIABLES

    found = []
    # a lane's runtime (triton) may live apart from torch (nox links one shared torch)
    runtime = VARIABLES[variable].worker_distributions if variable in VARIABLES else ()
    for module in ("torch", "numpy", *sorted(siblings(variable) if variable else ()), *runtime):
        with contextlib.suppress(ImportError, AttributeError, TypeError):
            found.append(str(Path(str(__import__(module).__file__)).resolve().parents[1]))
    if variable and siblings(variable):
        import site

        found += [folder for folder in site.getsitepackages() if Path(folder).is_dir()]
    return sorted(set(found))


@functools.cache
def distributions(variable: str) -> frozenset[str]:
    """The third-party distributions a candidate's worker may import (with all they
    require): torch and numpy, and those its reference's distribution and the siblings'
    require (the scheduler's tqdm)."""
    from importlib import metadata

    from gptlab_testkit.loading.variables import MECHANISM_VARIABLES, VARIABLES

    names = {"torch", "numpy"}
    if variable in VARIABLES:  # a Triton kernel's worker imports triton too
        names |= set(VARIABLES[variable].worker_distributions)
    if variable not in MECHANISM_VARIABLES:
        return frozenset(names)
    for package in (VARIABLES[variable].package, *siblings(variable)):
        with contextlib.suppress(metadata.PackageNotFoundError):
            for requirement in metadata.requires(f"gptlab-{package.replace('_', '-')}") or []:
                name = re.split(r"[\s<>=!~;@\[(]", requirement.strip(), maxsplit=1)[0]
                if ";" not in requirement and not name.startswith("gptlab-"):
                    names.add(name)
    return frozenset(names)


def seen_roots(variable: str) -> tuple[str, ...]:
    """What the worker's sandbox holds of its import roots: the entries of its
    distributions and its siblings' package folders (a trusted fixture: every root)."""
    roots = tuple(site_dirs(variable))
    if trusted():
        return roots
    packages = []
    for module in sorted(siblings(variable)):
        with contextlib.suppress(ImportError, AttributeError, TypeError):
            packages.append(str(Path(str(__import__(module).__file__)).resolve().parent))
    return (*packages, *sandbox.entries(roots, distributions(variable)))


def sandboxed(
    variable: str, scratch: Path, argv: list[str], fixtures: tuple[str, ...] = ()
) -> tuple[list[str], dict[str, str]]:
    """The command and environment that start `argv` as this variable's worker: in its
    sandbox, or bare only where none can be made and the testkit's own tests allow it.
    `fixtures`: a trusted fixture's folders, seen read-only where they lie."""
    why = sandbox.refusal()
    if why is None:
        seen = (*seen_roots(variable), *fixtures)
        view = sandbox.View(seen, str(scratch), variable in LOOPBACK_VARIABLES)
        return sandbox.command(view, argv), {
            **sandbox.environment(),
            **worker_environment(variable),
        }
    if sandbox.unsandboxed_allowed():
        return argv, {
            "PATH": "/usr/bin:/bin",
            "OMP_NUM_THREADS": "1",
            **worker_environment(variable),
        }
    raise sandbox.SandboxRefusedError(why)


def worker_environment(variable: str) -> dict[str, str]:
    """What this variable's worker alone has in its environment (TRITON_INTERPRET=1 for a
    Triton kernel: the candidate's kernel runs under the interpreter there, not here)."""
    from gptlab_testkit.loading.variables import VARIABLES

    return dict(VARIABLES[variable].worker_environment) if variable in VARIABLES else {}


def limits(memory_mib: int) -> Any:
    """Before bubblewrap starts: a session of its own, the memory cap and no core file
    (inherited by the worker), and as root a cap on the processes of the worker's user."""

    def apply() -> None:
        os.setsid()
        if memory_mib > 0:
            size = memory_mib * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sandbox.worker_user() is not None:  # root is exempt; the worker, once nobody, not
            resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))

    return apply
