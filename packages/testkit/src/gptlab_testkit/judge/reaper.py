"""Own a run's whole process tree: nothing a candidate starts outlives its run.

A process group is not enough: a candidate can leave it (`setsid`) and a double fork
hands its grandchild to init, where no `killpg` reaches it (a detached writer then
rewrites `results.json` after grade has exited). Each run therefore starts under a
*keeper*: a small process forked from the grading process, which never runs candidate
code, marks itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`, Linux >= 3.4)
and forks the run. Every orphan of the run, setsid or not, is re-parented to the
keeper instead of init; when the run ends (or is told to stop) the keeper kills every
descendant and reaps until it has no child left, and only then exits. The grading
process writes results after the keeper is gone.

Why not a cgroup: cgroup v2 delegation is rarely available to an unprivileged grader
(or in a container such as Gradescope's image), and a cgroup v1 freezer needs root and
a writable hierarchy; the subreaper needs neither and owns the same tree. A candidate
running as the grader's own user can still kill its keeper: the grading process is a
subreaper too (`become_subreaper`), so such orphans come to it and `sweep` kills
them. Where the worker runs as another user (see `worker`), it cannot signal either.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
_SWEEP_LIMIT_S = 10.0


def become_subreaper() -> bool:
    """Orphans of this process's descendants come to it, not to init (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """{pid: parent pid} of every process this user can see (/proc)."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            found[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    return found


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every living descendant of `root` (children first)."""
    parents = _parents() if parents is None else parents
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            found.append(child)
            frontier.append(child)
    return found


def _kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def end_tree(keep: Callable[[int], bool] = lambda _pid: False) -> None:
    """Kill every descendant of this process (but the children `keep` names, and theirs)
    and reap until none is left: a subreaper's last act before results are written."""
    deadline = time.monotonic() + _SWEEP_LIMIT_S
    while time.monotonic() < deadline:
        parents = _parents()
        me = os.getpid()
        spared = {pid for pid, parent in parents.items() if parent == me and keep(pid)}
        doomed = [
            pid
            for pid in descendants(me, parents)
            if pid not in spared and not (set(_ancestry(pid, parents, me)) & spared)
        ]
        if not doomed:
            return
        _kill_all(doomed)
        _reap_children(spared)
        time.sleep(0.01)


def _ancestry(pid: int, parents: dict[int, int], stop: int) -> list[int]:
    """`pid`'s ancestors up to (not including) `stop`, nearest first."""
    chain: list[int] = []
    while pid in parents and parents[pid] != stop:
        pid = parents[pid]
        if pid in chain:  # a loop in a racy /proc read
            break
        chain.append(pid)
    return chain


def _reap_children(spared: set[int]) -> None:
    """Collect the exit status of dead children (zombies) other than `spared`."""
    for pid in descendants(os.getpid()):
        if pid in spared:
            continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


# -- the grading process: strays of a run whose keeper was killed

SUBREAPER = False  # this process became a subreaper (grade's entry points)
LIVE_KEEPERS: set[int] = set()  # keepers of runs still going


def guard_grading_process() -> None:
    """Called by grade's entry points before any run starts."""
    global SUBREAPER
    SUBREAPER = become_subreaper()


def sweep() -> None:
    """Kill this process's descendants that no live keeper owns (orphans of a run whose
    keeper was killed come here); a no-op unless this process is a subreaper."""
    if SUBREAPER:
        end_tree(keep=lambda pid: pid in LIVE_KEEPERS)
