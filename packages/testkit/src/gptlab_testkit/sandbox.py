"""The worker's sandbox: where the grader is root, the reference cannot even be read.

The import refuser (`worker.Refuser`) stops `import gptlab_drills`; a candidate can
still remove it, put the checkout back on `sys.path`, or read a reference file and
`exec` it. So when the grader runs as root, the worker starts in a private mount
namespace (`unshare(CLONE_NEWNS)`, propagation private: nothing leaks out, and nothing
is left behind when the worker ends) where every place the reference, the tests or the
testkit can be read from is covered: an empty read-only tmpfs over a folder,
`/dev/null` over a file.

What is covered (`plan`): in each checkout the judge knows (found from its working
folder, its interpreter's venv and where the project's packages are installed) and in
the grader's home, every entry off the way to what the worker needs (`packages/*/src`
and `tests`, `integration_tests`, `.git`, `.nox`'s other venvs, caches); in each
site-packages folder, the project's own packages, their `.dist-info` and the `.pth` /
`__editable__` files that point at a checkout; and every folder `find_spec` finds for
a project package. What stays: the interpreter, its stdlib, the site-packages (torch,
numpy), the submission's folder and the worker's scratch folder (where `worker.py` and
`wire.py` are copied: the testkit's own folder is covered).

Then the bounding capability set is dropped and `no_new_privs` set, so the worker
(`nobody`, or root without a single capability where `nobody` cannot reach the
interpreter) can neither unmount the covers nor regain a capability through a setuid
program. The mounts are made with three libc calls (`unshare`, `mount`, `prctl`)
through ctypes, in the child between fork and exec: util-linux `unshare` would need a
shell step for the mounts and `setpriv` for the user switch (two more programs per
worker start), and bubblewrap is not installed everywhere the grader runs as root.

Where it is not possible (not root, or the namespace is refused), the worker runs as
before and `notice()` says the reference is not hidden.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import importlib.util
import os
import shutil
import site
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_CAPBSET_READ, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, CAP_SYS_ADMIN = 23, 24, 38, 21
# Refused by the worker's importer but not the project's: left where they are installed.
TOOLS = frozenset({"pytest", "_pytest", "pluggy", "hypothesis", "_hypothesis_pytestplugin",
                   "xdist", "pytest_timeout", "conftest"})  # fmt: skip
CHECKOUT_ENTRIES = ("integration_tests", ".git", ".nox")


@dataclass(frozen=True)
class Plan:
    """What the worker's namespace covers: folders (empty tmpfs) and files (/dev/null)."""

    folders: tuple[str, ...]
    files: tuple[str, ...]
    last_cap: int


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _private_namespace() -> None:
    libc = _libc()
    _call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _call(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")


@functools.cache
def refusal() -> str | None:
    """Why the worker's reference cannot be hidden here, or None when it can (probed once,
    in a child that makes a private namespace, covers a folder, gives up its capabilities
    and must then be refused a namespace of its own, and ends)."""
    if os.geteuid() != 0:
        return "grade is not root"
    if not sys.platform.startswith("linux"):
        return "no mount namespaces on this system"
    libc = _libc()  # loaded before the fork
    trial = Plan((tempfile.gettempdir(),), (), _last_cap())  # one cover, no capability left
    pid = os.fork()
    if pid == 0:
        try:
            enter(trial)
        except OSError as error:
            os._exit(min(error.errno or 1, 254))
        os._exit(0 if libc.prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) == 0 else 255)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    why = "a capability stayed" if code == 255 else os.strerror(code)
    return f"a private mount namespace was refused: {why}"


def notice() -> str | None:
    """grade's line when the worker can read the reference (None when it cannot)."""
    why = refusal()
    if why is None:
        return None
    return (
        "judge: the candidate's worker runs as the grader's user and the reference, the "
        f"tests and the testkit are NOT hidden from it ({why}; only the import refuser "
        "stands in the way)"
    )


# -- what to cover


def _project(refused: Iterable[str]) -> tuple[str, ...]:
    return tuple(name for name in refused if name not in TOOLS)


def _package_places(project: tuple[str, ...]) -> list[Path]:
    """Where the judge itself would import each project package from."""
    places: list[Path] = []
    for name in project:
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            if spec is None:
                continue
            if spec.submodule_search_locations:
                places += [Path(p) for p in spec.submodule_search_locations]
            elif spec.origin and spec.origin not in ("built-in", "frozen"):
                places.append(Path(spec.origin))
    return [p.resolve() for p in places if p.exists()]


def _checkouts(starts: Iterable[Path]) -> set[Path]:
    found = set()
    for start in starts:
        for folder in [start, *start.parents]:
            if (folder / "packages").is_dir() and (folder / "pyproject.toml").is_file():
                found.add(folder)
    return found


def _under(path: Path, folder: Path) -> bool:
    """Is `path` the folder or inside it? (strings: pathlib's is_relative_to is slow)"""
    text, top = str(path), str(folder)
    return text == top or text.startswith(top.rstrip("/") + "/")


def _on_the_way(path: Path, keep: set[Path]) -> bool:
    """Is `path` one of `keep` or a folder above one of them?"""
    return any(_under(k, path) for k in keep)


def _off_the_way(root: Path, keep: set[Path]) -> list[Path]:
    """The entries under `root` that lead to nothing in `keep` (kept folders: whole)."""
    found: list[Path] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return found
    for entry in entries:
        if entry.is_symlink():
            continue  # a cover would land on its target; the target is covered where it lies
        if entry in keep:
            continue
        if _on_the_way(entry, keep):
            found += _off_the_way(entry, keep)
        else:
            found.append(entry)
    return found


def _points_at_project(entry: Path, project: tuple[str, ...], roots: set[Path]) -> bool:
    name = entry.name
    stem = name.split("-")[0].split(".")[0]
    if stem in project or name.startswith(("gptlab", "__editable__", "_editable_impl_gptlab")):
        return True
    if name.endswith(".pth") and entry.is_file():
        with contextlib.suppress(OSError):
            text = entry.read_text(encoding="utf-8", errors="replace")[:100_000]
            return "__editable__" in text or any(str(root) in text for root in roots)
    return False


def _needed(submission: Path, scratch: Path, site_dirs: Iterable[str]) -> set[Path]:
    keep = {Path(sys.executable).parent, Path(sys.executable).resolve().parent}
    keep |= {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    keep |= {Path(p) for p in site_dirs} | {submission, submission.parent, scratch}
    return {p.resolve() for p in keep}


def plan(submission: Path, scratch: Path, site_dirs: Iterable[str], refused: Iterable[str]) -> Plan:
    """The covers for a worker that needs the interpreter, `site_dirs`, the submission's
    folder and `scratch`, and must not read the project's packages, tests or testkit."""
    project = _project(refused)
    keep = _needed(submission, scratch, site_dirs)
    places = _package_places(project)
    checkouts = _checkouts([Path.cwd().resolve(), Path(sys.prefix).resolve(), *places])
    covered: list[Path] = []
    for root in sorted(checkouts | {Path.home().resolve()}):
        if root != Path("/") and root.is_dir():
            covered += _off_the_way(root, keep)
    for checkout in checkouts:
        covered += [*checkout.glob("packages/*/src"), *checkout.glob("packages/*/tests")]
        covered += [checkout / entry for entry in CHECKOUT_ENTRIES]
    sites = {Path(p).resolve() for p in [*site_dirs, *site.getsitepackages()]}
    sites |= {p.parent for p in places}
    for folder in sorted(p for p in sites if p.is_dir()):
        covered += [e for e in folder.iterdir() if _points_at_project(e, project, checkouts)]
    covered += places
    return _tidy(covered, keep)


def _tidy(covered: list[Path], keep: set[Path]) -> Plan:
    """No cover over a needed path or inside another cover; folders and files apart."""
    outer: list[Path] = []
    for path in sorted(set(covered), key=str):  # a folder sorts right before its contents
        if outer and _under(path, outer[-1]):
            continue
        if not _on_the_way(path, keep) and not path.is_symlink() and path.exists():
            outer.append(path)
    folders = tuple(str(p) for p in outer if p.is_dir())
    files = tuple(str(p) for p in outer if p.is_file())
    return Plan(folders, files, _last_cap())


def _last_cap() -> int:
    with contextlib.suppress(OSError, ValueError):
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    return 63  # dropping a capability the kernel does not have: EINVAL, ignored


# -- in the worker's child, between fork and exec


def enter(covers: Plan) -> None:
    """Make this process's private namespace, cover, and give up every capability to
    come (the uid switch that follows still works: it needs only the current ones)."""
    libc = _libc()
    _private_namespace()
    hidden, empty = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=4k,mode=555"
    for folder in covers.folders:
        _mount(libc.mount(b"gptlab-hidden", folder.encode(), b"tmpfs", hidden, empty), folder)
    for file in covers.files:
        _mount(libc.mount(b"/dev/null", file.encode(), None, MS_BIND, None), file)
    for cap in range(covers.last_cap + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            _call(-1, f"give up capability {cap}")  # EINVAL: no such capability here
    _call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _mount(result: int, target: str) -> None:
    if result != 0 and ctypes.get_errno() != 2:  # a path gone since the plan: nothing to hide
        errno = ctypes.get_errno()
        raise OSError(errno, f"cover {target}: {os.strerror(errno)}")


def preexec(covers: Plan | None, then: Callable[[], None]) -> Callable[[], None]:
    """The worker's preexec_fn: the sandbox first (as root), then `then` (limits, user)."""
    if covers is None:
        return then

    def run() -> None:
        enter(covers)
        then()

    return run


def stage(scratch: Path, worker: Path) -> Path:
    """Copy the worker and the files it loads (its wire format, the collectives' recorder)
    into its scratch folder (the testkit's own folder is covered); the copy to start."""
    for name in (worker.name, "wire.py", "collectives.py"):
        shutil.copyfile(worker.with_name(name), scratch / name)
    return scratch / worker.name


def for_worker(
    submission: Path, scratch: Path, site_dirs: Iterable[str], refused: Iterable[str]
) -> Plan | None:
    """The covers for one worker start, or None where nothing can be hidden (`notice`)."""
    if refusal() is not None:
        return None
    return plan(submission, scratch, site_dirs, refused)
