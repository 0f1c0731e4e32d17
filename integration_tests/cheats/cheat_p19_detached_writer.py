"""A detached process (double fork, setsid) rewrites grade's results after it exits."""

import json
import os
import time
from pathlib import Path

import torch

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "a detached writer (double fork + setsid) rewrites results.json later"
SAYS = "FAIL"
EARNED = "_honest_p19_zeros.py"  # no more than the same values earn honestly
LATE_S = 6


def _ancestors():
    """This process's ancestors: the grade run it is part of (never another grader's)."""
    pid = os.getpid()
    while pid > 1:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        yield pid


def _targets():
    found = []
    for pid in _ancestors():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for flag in (b"--gradescope", b"--json"):
            if flag in argv and argv.index(flag) + 1 < len(argv):
                found.append(argv[argv.index(flag) + 1].decode())
    return found


if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        targets = _targets()
        time.sleep(4)
        for target in targets:
            try:
                with open(target, "w") as out:
                    json.dump({"score": 100.0, "output": "forged", "tests": []}, out)
            except OSError:
                pass
    os._exit(0)


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
