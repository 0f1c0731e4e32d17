"""Compose gptlab's packages into test, grading, lint and build sessions.

Each package session gets its own virtualenv holding only that package, the
siblings it declares and its test tools, so an undeclared sibling import fails
there. torch is installed once per machine into `.nox/_torch` (a plain
`--target` directory) and linked into every venv with a `.pth` file: the same
local CPU wheel, without twenty copies of it.

Set a package's variable (e.g. KV_CACHE_MODULE=my_attempt.py) to grade a
candidate; its package session then runs only the contract tests, under the
gptlab plugin's grading protections (per-test limit, forked test processes, memory
limit: on by default whenever a candidate is swapped in).
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES_DIR = ROOT / "packages"
TORCH_REQUIREMENT = "torch==2.13.0"
TORCH_SITE = ROOT / ".nox" / "_torch"
INDUCTOR_CACHE = ROOT / ".cache" / "inductor"  # compiled kernels, autotune results

# uv where it is installed (`pip install uv`, as .ci/run does): venvs and installs in seconds;
# virtualenv and pip otherwise.
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_external_run = True
# Sessions keep bytecode: with PYTHONDONTWRITEBYTECODE set (some machines set it), every
# pytest run compiled and assertion-rewrote each test module again (~0.5 s a run, over a
# hundred runs in known_bad). The caches go to git-ignored __pycache__ folders.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# package directory -> the variable its suite grades
PACKAGE_VARIABLES = {
    "tinygpt": "TINY_GPT_MODULE",
    "modern_lm": "MODERN_LM_MODULE",
    "cache_aware_lm": "CACHE_AWARE_LM_MODULE",
    "kv_cache": "KV_CACHE_MODULE",
    "prefix_cache": "PREFIX_CACHE_MODULE",
    "chunked_prefill": "CHUNKED_PREFILL_MODULE",
    "speculative": "SPECULATIVE_DECODING_MODULE",
    "paged_kv": "PAGED_KV_MODULE",
    "scheduler": "SCHEDULER_MODULE",
    "moe_lm": "MOE_LM_MODULE",
    "runtime_lm": "RUNTIME_LM_MODULE",
    "fragment_lm": "FRAGMENT_LM_MODULE",
}
RUNTIME_PACKAGES = tuple(PACKAGE_VARIABLES)
# grading; the trained pair; practice; the repair-lane drills; the shared argument checks
EXTRA_PACKAGES = ("testkit", "stdlib_pair", "practice", "drills", "arg_checks", "kernels")
# the inference-state slice after the base models (M05's moe_lm, M04's runtime_lm and M10's
# fragment_lm are model builds, not in it)
SLICE_PACKAGES = tuple(
    n for n in RUNTIME_PACKAGES[2:] if n not in ("moe_lm", "runtime_lm", "fragment_lm")
)


# The newest torch these machines install (a CUDA build, run on the CPU), with the oldest
# numpy the packages accept: `nox -s newest_torch` runs the suites on it.
NEWEST_TORCH = ("torch==2.14.1", "numpy==1.26.4")
NEWEST_TORCH_SITE = ROOT / ".nox" / "_torch_newest"


def _shared_torch(
    requirements: tuple[str, ...] = (TORCH_REQUIREMENT, "numpy"), site: Path = TORCH_SITE
) -> Path:
    """Install a torch (the local CPU build by default) once per machine into a plain directory."""
    marker = site / ".complete"
    wanted = " ".join(requirements) + "\n"
    if not marker.exists() or marker.read_text() not in (wanted, requirements[0] + "\n"):
        import subprocess

        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--target",
                str(site),
                "--upgrade",
                *requirements,
            ],
            check=True,
        )
        marker.write_text(wanted)
    return site


def _link_torch(session: nox.Session, site: Path | None = None) -> None:
    purelib = session.run(
        "python",
        "-c",
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        silent=True,
    )
    assert isinstance(purelib, str)
    torch_site = site if site is not None else _shared_torch()
    Path(purelib.strip(), "_gptlab_shared_torch.pth").write_text(f"{torch_site}\n")


# uv resolves every requirement itself and would fetch a multi-GB CUDA torch from the index;
# an override that can never apply drops torch (and numpy, installed beside it) from its
# resolution: both already sit on every venv's path through the .pth link above.
TORCH_OVERRIDES = 'torch; sys_platform == "never"\nnumpy; sys_platform == "never"\n'


def _torch_overrides() -> Path:
    path = TORCH_SITE.parent / "_torch_overrides.txt"
    if not path.exists() or path.read_text() != TORCH_OVERRIDES:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TORCH_OVERRIDES)
    return path


# Not sources: tests (never installed), build output and every tool's cache. Hidden
# names are caches too (.hypothesis, .pytest_cache, .mypy_cache, .ruff_cache, .coverage,
# ...): a test run inside a package must not make every later session reinstall.
SKIPPED_DIRS = {"tests", "__pycache__", "build", "dist", "mutants", "htmlcov", "node_modules"}
SKIPPED_SUFFIXES = (".egg-info", ".pyc", ".pyo")


def _is_source(name: str) -> bool:
    """A file or folder name that can be part of an installed package."""
    return not (name.startswith(".") or name in SKIPPED_DIRS or name.endswith(SKIPPED_SUFFIXES))


@functools.cache
def _sources_digest() -> str:
    """Every installable file of every package: an edit anywhere reinstalls this repo's packages."""
    digest = hashlib.sha256()
    for folder, subfolders, files in os.walk(PACKAGES_DIR):
        subfolders[:] = sorted(d for d in subfolders if _is_source(d))
        for name in sorted(filter(_is_source, files)):
            path = Path(folder, name)
            digest.update(str(path.relative_to(PACKAGES_DIR)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


# Part of every install stamp: a change to how _install installs makes every venv install
# once more (2: a session's second install no longer uninstalls what its first installed).
INSTALL_SCHEME = "2"


def _install(session: nox.Session, *requirements: str, local: bool = False) -> None:
    """`session.install`, skipped when this venv already holds exactly these requirements.

    A warm venv then costs nothing: the same requirements from an index, or this repo's
    packages (`local`) with unchanged sources, are not reinstalled. Local packages are
    installed anew when any source changed, the siblings they pull in too (neither pip nor
    uv rebuilds an installed direct-reference dependency by itself).
    """
    key = (INSTALL_SCHEME, str(session.venv_backend), *requirements)
    wanted = hashlib.sha256("\0".join(key).encode())
    stamp = Path(session.virtualenv.location, f".gptlab-install-{wanted.hexdigest()[:16]}")
    state = _sources_digest() if local else "index"
    if stamp.exists() and stamp.read_text() == state:
        session.log(f"already installed: {' '.join(Path(r).name for r in requirements)}")
        return
    # Only what this call installs is refreshed: a session that installs twice (practice,
    # bench) keeps what its first call installed.
    fresh = sorted(_local_closure(requirements)) if local else []
    if session.venv_backend == "uv":
        reinstall = [f"--reinstall-package={name}" for name in fresh]
        session.install("--override", str(_torch_overrides()), *reinstall, *requirements)
    else:
        if fresh:  # pip keeps a direct-reference sibling that is already installed
            session.run("python", "-m", "pip", "uninstall", "--quiet", "-y", *fresh)
        # No bytecode at install (uv writes none either): a module is compiled when first
        # imported, and most installed modules never are.
        session.install("--no-compile", *requirements)
    if not _no_install(session):  # under -R nox may have skipped the install just asked for
        stamp.write_text(state)


SIBLING = "{root:parent:uri}/"  # how a package names a sibling in its pyproject.toml


@functools.cache
def _project(folder: Path) -> dict:
    import tomllib

    return dict(tomllib.loads((folder / "pyproject.toml").read_text())["project"])


def _local_closure(requirements: tuple[str, ...]) -> set[str]:
    """This repo's distributions that local requirements (``folder[extras]``) install:
    their own and every sibling they pull in, through dependencies and asked-for extras."""
    names: set[str] = set()
    todo = list(requirements)
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        if requirement in seen:
            continue
        seen.add(requirement)
        folder, _, extras = requirement.partition("[")
        project = _project(Path(folder))
        names.add(project["name"])
        dependencies = list(project.get("dependencies", []))
        for extra in filter(None, extras.rstrip("]").split(",")):
            dependencies += project.get("optional-dependencies", {}).get(extra.strip(), [])
        for dependency in dependencies:
            if SIBLING in dependency:
                head, _, sibling = dependency.partition(SIBLING)
                sibling_extras = head.split("@")[0].strip().partition("[")[2]
                suffix = f"[{sibling_extras}" if sibling_extras else ""
                todo.append(f"{PACKAGES_DIR / sibling.strip()}{suffix}")
    return names


def _no_install(session: nox.Session) -> bool:
    """`nox -R` / `--no-install`: nox skips every install into a reused venv itself."""
    config = getattr(getattr(session, "_runner", None), "global_config", None)
    return bool(getattr(config, "no_install", False))


def install_packages(
    session: nox.Session, *names: str, extras: str = "test", torch_site: Path | None = None
) -> None:
    """Install packages from this repository (never from an index) over the shared torch."""
    _link_torch(session, torch_site)
    suffix = f"[{extras}]" if extras else ""
    _install(session, *(f"{PACKAGES_DIR / name}{suffix}" for name in names), local=True)


def _contract_only(names: tuple[str, ...]) -> list[str]:
    """A swapped-in candidate is graded on the contract alone."""
    swapped = any(os.environ.get(PACKAGE_VARIABLES[name]) for name in names)
    return ["-m", "contract"] if swapped else []


def run_suites(session: nox.Session, names: tuple[str, ...], *paths: str) -> None:
    suites = [str(PACKAGES_DIR / name / "tests") for name in names] + list(paths)
    session.run("pytest", *suites, *_contract_only(names), *session.posargs)


def _package_session(name: str) -> None:
    @nox.session(name=name)
    def suite(session: nox.Session) -> None:
        install_packages(session, name)
        run_suites(session, (name,))

    suite.__doc__ = f"The {name} suite, in a venv holding only its package and declared siblings."


for _name in RUNTIME_PACKAGES:
    _package_session(_name)


# Views on demand: `nox` already runs every test they select (the tinygpt and package
# sessions, integration), so CI does not pay for them twice.
def _tier_session(tier: int) -> None:
    @nox.session(name=f"tier{tier}", default=False)
    def suite(session: nox.Session) -> None:
        install_packages(session, "tinygpt")
        marker = f"tier{tier}" + (" and contract" if _contract_only(("tinygpt",)) else "")
        session.run(
            "pytest", str(PACKAGES_DIR / "tinygpt" / "tests"), "-m", marker, *session.posargs
        )

    suite.__doc__ = f"tinygpt tier {tier} only (honours TINY_GPT_MODULE)."


for _tier in range(4):
    _tier_session(_tier)


@nox.session
def testkit(session: nox.Session) -> None:
    """The grading machinery's own tests."""
    install_packages(session, "testkit")
    # The Gradescope test grades a real kv_cache submission (kv_cache's suites and siblings);
    # grade's doors and the cheats take drill ids; the mutation runner's test runs mutmut.
    install_packages(session, *RUNTIME_PACKAGES, "drills")
    _install(session, MUTMUT_REQUIREMENT)
    session.run("pytest", str(PACKAGES_DIR / "testkit" / "tests"), *session.posargs)


@nox.session(default=False)
def practice(session: nox.Session) -> None:
    """Timed blank-editor practice: `nox -s practice -- start tinygpt`, `-- check`, `-- status`."""
    install_packages(session, *RUNTIME_PACKAGES, "kernels")  # the Triton lane's items (T01-T08)
    install_packages(session, "practice", extras="plot")
    session.run("gptlab-practice", *session.posargs)


@nox.session
def practice_tests(session: nox.Session) -> None:
    """The practice tool's own tests (stages data, the store, end-to-end loops on a fake clock)."""
    install_packages(session, *RUNTIME_PACKAGES, "kernels")  # a T item's start and check
    install_packages(session, "practice", extras="plot")
    session.run("pytest", str(PACKAGES_DIR / "practice" / "tests"), *session.posargs)


@nox.session
def integration(session: nox.Session) -> None:
    """The composed slice: prefix cache -> KVCache -> chunked prefill -> decode; and every
    package README's example (so the drills, the stdlib pair and the kernels are here too)."""
    install_packages(session, *RUNTIME_PACKAGES, "drills", "stdlib_pair", "kernels")
    session.run("pytest", "integration_tests", *session.posargs)


@nox.session(name="slice", default=False)
def slice_(session: nox.Session) -> None:
    """The five runtime suites plus integration, in one venv."""
    install_packages(session, *RUNTIME_PACKAGES)
    run_suites(session, SLICE_PACKAGES, "integration_tests")


@nox.session
def drills(session: nox.Session) -> None:
    """Every repair-lane drill's suite (DRILL_P19_MODULE=x.py: that drill's contract only)."""
    install_packages(session, "drills")
    swapped = any(k.startswith("DRILL_") and v.strip() for k, v in os.environ.items())
    contract = ["-m", "contract"] if swapped else []
    session.run("pytest", str(PACKAGES_DIR / "drills" / "tests"), *contract, *session.posargs)


@nox.session
def kernels(session: nox.Session) -> None:
    """The Triton lane's suites (T01-T08) under Triton's interpreter where there is no CUDA
    (installs triton: a ~285 MB wheel, once per venv); DRILL_T01_MODULE=x.py: its contract."""
    install_packages(session, "kernels")
    swapped = any(k.startswith("DRILL_T") and v.strip() for k, v in os.environ.items())
    contract = ["-m", "contract"] if swapped else []
    session.run("pytest", str(PACKAGES_DIR / "kernels" / "tests"), *contract, *session.posargs)


@nox.session(default=False)
def grade(session: nox.Session) -> None:
    """Main job: grade the slice (references by default). `-- kv_cache attempt.py` swaps one;
    `-- p19 my_p19.py` grades a drill, `-- t01 my_axpy.py` a Triton kernel."""
    install_packages(session, *RUNTIME_PACKAGES, "drills", "kernels")
    session.run("python", "-m", "gptlab_testkit.grade", *session.posargs)


@nox.session(default=False)
def gradescope(session: nox.Session) -> None:
    """The Gradescope autograder zip: `nox -s gradescope -- --points 100` (examples/gradescope)."""
    install_packages(session, "testkit", extras="")
    session.run("python", "examples/gradescope/build_zip.py", *session.posargs)


# Each known-bad candidate must fail at least MIN_CATCHES (3) contract tests. "report"
# lists the candidates below that floor without failing the session; "enforce" fails it.
KNOWN_BAD_FLOOR = os.environ.get("GPTLAB_KNOWN_BAD_FLOOR", "enforce")


@nox.session
def known_bad(session: nox.Session) -> None:
    """Prove the ladder: known-bad candidates are caught and routed; faithful ones pass.

    Grades only the targets (a package, a drill) whose stamp in `<known-bad folder>/stamps/`
    is stale or missing, and stamps those that hold; `-- --all` proves every target again,
    `-- -k p20` one target, stamped or not."""
    install_packages(session, *RUNTIME_PACKAGES, "drills", "kernels")
    drills, kernels = PACKAGES_DIR / "drills", PACKAGES_DIR / "kernels"
    session.run(
        "python", "-m", "gptlab_testkit.known_bad",
        "integration_tests/known_bad", str(drills / "known_bad"), str(kernels / "known_bad"),
        "--faithful", "integration_tests/faithful", "--faithful", str(drills / "faithful"),
        "--faithful", str(kernels / "faithful"),
        "--per-drill", f"--floor={KNOWN_BAD_FLOOR}",
        # One mutant per graded clause of every drill and of M02, each proved by the tests'
        # own checks (an oracle or a documented error), a semantic clause's by two.
        "--clause-mutants", str(drills / "clause_mutants"),
        "--clause-readme", str(drills / "README.md"),
        "--clause-mutants", str(kernels / "clause_mutants"),
        "--clause-readme", str(kernels / "README.md"),
        "--clause-readme", str(PACKAGES_DIR / "modern_lm" / "README.md"),
        "--clause-readme", str(PACKAGES_DIR / "moe_lm" / "README.md"),
        "--clause-readme", str(PACKAGES_DIR / "runtime_lm" / "README.md"),
        "--clause-readme", str(PACKAGES_DIR / "fragment_lm" / "README.md"),
        "--clause-readme", str(PACKAGES_DIR / "cache_aware_lm" / "README.md"),
        *session.posargs,
    )  # fmt: skip


@nox.session(default=False)
def cheats(session: nox.Session) -> None:
    """Hostile submissions through grade and its Gradescope file: none may earn credit.

    Not part of `nox` (every cheat: about 4 min on 2 cores); CI runs `-- --quick`, one
    cheat per kind (about 2 min); no argument every enforced cheat; `-- --all` each singly."""
    install_packages(session, *RUNTIME_PACKAGES, "drills")
    cheats_folder = "integration_tests/cheats"
    session.run("python", "-m", "gptlab_testkit.cheats", cheats_folder, *session.posargs)


@nox.session
def keeps_torch(session: nox.Session) -> None:
    """Installing any package (alone or all together) keeps the torch and numpy already there."""
    session.run("python", "tools/keeps_torch.py", *session.posargs)


@nox.session(default=False)
def newest_torch(session: nox.Session) -> None:
    """Every package's and drill's contract suite on the newest torch (2.14.1) and the oldest
    numpy the packages accept, and each package imported under -W error there."""
    site = _shared_torch(NEWEST_TORCH, NEWEST_TORCH_SITE)
    install_packages(session, *RUNTIME_PACKAGES, "drills", torch_site=site)
    session.run("python", "-c", "import torch, numpy; print(torch.__version__, numpy.__version__)")
    for name in (*RUNTIME_PACKAGES, "drills", "testkit"):
        module = IMPORT_NAMES.get(name, name)
        session.run("python", "-W", "error", "-c", f"import {module}", silent=True)
    suites = [str(PACKAGES_DIR / name / "tests") for name in (*RUNTIME_PACKAGES, "drills")]
    session.run("pytest", *suites, "-m", "contract", "-q", *session.posargs)


@nox.session
def interop(session: nox.Session) -> None:
    """Equality with Hugging Face transformers (GPT-2, Llama and Mixtral), small random configs."""
    install_packages(
        session, "tinygpt", "modern_lm", "cache_aware_lm", "moe_lm", "runtime_lm", extras="test,hf"
    )
    session.run(
        "pytest",
        str(PACKAGES_DIR / "tinygpt" / "tests" / "test_tinygpt_hf_interop.py"),
        str(PACKAGES_DIR / "modern_lm" / "tests" / "test_modern_lm_llama.py"),
        str(PACKAGES_DIR / "cache_aware_lm" / "tests" / "test_cache_aware_lm_llama_interop.py"),
        str(PACKAGES_DIR / "moe_lm" / "tests" / "test_moe_lm_mixtral.py"),
        str(PACKAGES_DIR / "moe_lm" / "tests" / "test_moe_lm_extension.py"),
        str(PACKAGES_DIR / "runtime_lm" / "tests" / "test_runtime_lm_llama.py"),
        *session.posargs,
    )


@nox.session
def compiled(session: nox.Session) -> None:
    """The compiled paths (decode; speculation) against their references, tiny models."""
    install_packages(session, "cache_aware_lm", "speculative")
    session.run(
        "pytest",
        str(PACKAGES_DIR / "cache_aware_lm" / "tests" / "test_cache_aware_lm_compiled.py"),
        str(PACKAGES_DIR / "speculative" / "tests" / "test_speculative_serving.py"),
        "-k",
        "compiled",
        *session.posargs,
        # The inductor cache in a known place: a second run compiles warm.
        env={"GPTLAB_COMPILED_TESTS": "1", "TORCHINDUCTOR_CACHE_DIR": str(INDUCTOR_CACHE)},
    )


@nox.session(name="arg_checks")
def arg_checks_suite(session: nox.Session) -> None:
    """The shared argument checks' own tests, in a venv holding only that package."""
    install_packages(session, "arg_checks")
    session.run("pytest", str(PACKAGES_DIR / "arg_checks" / "tests"), *session.posargs)


PAIR_WEIGHTS = PACKAGES_DIR / "stdlib_pair" / "src" / "stdlib_pair" / "weights"


@nox.session(name="stdlib_pair")
def stdlib_pair_suite(session: nox.Session) -> None:
    """The trained pair: strict loading, documented held-out loss, the demo in quick mode."""
    install_packages(session, "stdlib_pair")
    session.run("pytest", str(PACKAGES_DIR / "stdlib_pair" / "tests"), *session.posargs)


@nox.session(default=False)
def train(session: nox.Session) -> None:
    """Retrain the target and draft pair deterministically into the package's weights folder."""
    install_packages(session, "stdlib_pair", extras="")
    session.run("python", "-m", "stdlib_pair.train", "--out", str(PAIR_WEIGHTS), *session.posargs)


@nox.session(default=False)
def demo(session: nox.Session) -> None:
    """Speculative decoding with the trained pair, streamed: `nox -s demo -- "def f(n):"`."""
    install_packages(session, "stdlib_pair", extras="demo")
    session.run("python", "-m", "stdlib_pair.demo", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks: writes bench/report.md and PNG plots (`-- --quick`, `-- --device cuda`)."""
    install_packages(session, *RUNTIME_PACKAGES, extras="")
    install_packages(session, "tinygpt", "cache_aware_lm", extras="hf")
    install_packages(session, "stdlib_pair", extras="")  # the trained pair (section 7)
    _install(session, "matplotlib>=3.8")
    committed = _bench_outputs()
    session.run("python", "-m", "bench.run", *session.posargs)
    if "--quick" in session.posargs and "--out" not in session.posargs:
        changed = sorted(p for p, d in _bench_outputs().items() if committed.get(p) != d)
        if changed or committed.keys() != _bench_outputs().keys():
            session.error(f"--quick changed the committed report: {changed or 'files added'}")


def _bench_outputs() -> dict[str, str]:
    """Digests of the committed bench outputs (report, sections, plots): --quick leaves them be."""
    folder = ROOT / "bench"
    paths = [folder / "report.md", *folder.glob("*.png"), *folder.glob("sections/*.json")]
    return {
        str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in paths
        if p.exists()
    }


MUTMUT_REQUIREMENT = "mutmut==3.8.1"  # gptlab_testkit.mutation reads its result files


@nox.session(default=False)
def mutation(session: nox.Session) -> None:
    """mutmut on references against their contract tests, every survivor accounted for:
    `-- p13` one drill, no argument every drill, modern_lm and the six; `-- --changed`
    only targets whose stamp is stale (what CI runs)."""
    install_packages(session, *RUNTIME_PACKAGES, "drills", "kernels")
    _install(session, MUTMUT_REQUIREMENT)
    session.run("python", "-m", "gptlab_testkit.mutation", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole tree; import-linter's contracts
    (pyproject.toml: no import circle in the testkit, the drills or practice)."""
    _install(session, "ruff>=0.6", "import-linter>=2.1")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # grimp reads the sources where the path finds them: no install of the packages needed
    sources = os.pathsep.join(
        str(PACKAGES_DIR / name / "src") for name in ("testkit", "drills", "practice")
    )
    session.run("lint-imports", env={"PYTHONPATH": sources})


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy (strict) over every package's source and the benchmarks."""
    install_packages(session, *RUNTIME_PACKAGES, "stdlib_pair")
    _install(session, "mypy>=1.10", "matplotlib>=3.8")  # bench/ is typed against matplotlib
    sources = [str(PACKAGES_DIR / name / "src") for name in (*RUNTIME_PACKAGES, *EXTRA_PACKAGES)]
    session.run("mypy", *sources, "bench")


@nox.session
def build(session: nox.Session) -> None:
    """hatchling builds every wheel and sdist; each wheel installs alone in a fresh venv."""
    import shutil
    import tempfile

    # Every package's build backend is hatchling: installed once here and used without
    # isolation, instead of build making (and filling) a fresh env for each of 20 builds.
    _install(session, "build>=1.2", "hatchling>=1.21", "virtualenv>=20")
    # Each wheel's own venv is made and filled by uv when the session runs on uv.
    uv = shutil.which("uv") if session.venv_backend == "uv" else None
    dist = ROOT / ".nox" / "_dist"
    shutil.rmtree(dist, ignore_errors=True)
    for name in (*RUNTIME_PACKAGES, *EXTRA_PACKAGES):
        # --sdist --wheel builds both from the source tree (not the wheel from the sdist),
        # so the sibling direct references resolve against this repository.
        session.run(
            "python",
            "-m",
            "build",
            "--sdist",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(dist / name),
            str(PACKAGES_DIR / name),
            silent=True,
        )
        wheels = sorted((dist / name).glob("*.whl"))
        sdists = sorted((dist / name).glob("*.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            session.error(f"{name}: expected one wheel and one sdist, got {wheels + sdists}")
        session.log(f"built {wheels[0].name} and {sdists[0].name}")
        # numpy sits beside the shared torch in every venv below, so the import check
        # cannot see a missing declaration: read it from the wheel instead.
        needs = _requirement_names(wheels[0])
        if "torch" in needs and "numpy" not in needs:
            session.error(f"{name}: requires torch but not numpy (torch warns on import)")
    for name in (*RUNTIME_PACKAGES, *EXTRA_PACKAGES):
        wheel = next((dist / name).glob("*.whl"))
        with tempfile.TemporaryDirectory(prefix=f"gptlab-{name}-") as scratch:
            venv = Path(scratch) / "venv"
            python = str(venv / "bin" / "python")
            if uv:
                session.run(
                    uv, "venv", "--quiet", "--python", sys.executable, str(venv), external=True
                )
            else:
                session.run("python", "-m", "virtualenv", "--quiet", str(venv), silent=True)
            purelib = session.run(
                python,
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                silent=True,
                external=True,
            )
            assert isinstance(purelib, str)
            Path(purelib.strip(), "_gptlab_shared_torch.pth").write_text(f"{_shared_torch()}\n")
            if uv:
                overrides = ("--override", str(_torch_overrides()))
                session.run(
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    python,
                    *overrides,
                    str(wheel),
                    external=True,
                )
            else:
                session.run(
                    python, "-m", "pip", "install", "--quiet", "--no-compile", str(wheel),
                    external=True,
                )  # fmt: skip
            # -W error: a lone install imports without a warning (numpy declared beside torch)
            check = _IMPORT_CHECK.format(name=IMPORT_NAMES.get(name, name))
            session.run(python, "-W", "error", "-c", check, external=True)


def _requirement_names(wheel: Path) -> set[str]:
    """The distribution names a wheel's METADATA requires (extras' requirements too)."""
    import re
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(metadata).decode().splitlines()
    return {
        re.split(r"[\s<>=!~;\[(@]", line.split(":", 1)[1].strip(), maxsplit=1)[0].lower()
        for line in lines
        if line.startswith("Requires-Dist:")
    }


# Package directories whose import name differs from the directory's.
IMPORT_NAMES = {
    "testkit": "gptlab_testkit",
    "practice": "gptlab_practice",
    "drills": "gptlab_drills",
    "kernels": "gptlab_kernels",
}

# Every name a package exports must resolve once installed alone.
_IMPORT_CHECK = """
import importlib
module = importlib.import_module("{name}")
exported = getattr(module, "__all__", [])
missing = [n for n in exported if not hasattr(module, n)]
assert not missing, f"{name}: __all__ names missing: {{missing}}"
print(f"{name}: imports alone, exports {{len(exported)}} names")
"""
