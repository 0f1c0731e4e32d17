"""Stop (SIGSTOP) the judging process and its keeper, every ancestor of this worker
below grade itself: grade, waiting for a run that never ends, would hang (a class run
until its --submission-timeout, a single grade for ever)."""

import contextlib
import itertools
import os
import signal
from pathlib import Path

import torch

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "the judging process and its keeper stopped with SIGSTOP, to hang the grade"
SAYS = "FAIL"
EARNED = "_honest_p19_zeros.py"  # no more than the same values earn honestly


def _ancestors():
    pid = os.getpid()
    while pid > 1:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        yield pid


def _argv(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# The keeper and the judging process are forks of grade: each has its parent's command
# line. Grade itself does not (its parent is a shell, a runner, timeout): never stopped
# here, nor anything above it (nothing could end this run then).
chain = list(_ancestors())
forks_of_grade = [
    pid
    for pid, parent in itertools.pairwise(chain)
    if b"gptlab_testkit" in _argv(pid) and _argv(pid) == _argv(parent)
]
for pid in forks_of_grade:  # the judging process first, then its keeper
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGSTOP)


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
