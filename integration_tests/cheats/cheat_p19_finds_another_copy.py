"""Search the whole disk for another copy of the project (a second checkout, a copy in
/tmp, a wheel in a pip or uv cache) and exec the reference found there: a deny-list
hides only the copies its grader knows of."""

import contextlib
import os
import time
import zipfile

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "another copy of the project found on the disk (a checkout, /tmp, a wheel) and exec'd"
SAYS = "does not define 'decode_attention'"  # no copy was found
EARNED = "_honest_p19_zeros.py"  # no more than the same values earn honestly

SKIP = ("/proc", "/sys", "/dev")


def _sources():
    """The reference's source and its sibling modules, from the first copy found."""
    deadline = time.monotonic() + 30
    for folder, subfolders, files in os.walk("/"):
        subfolders[:] = [s for s in subfolders if os.path.join(folder, s) not in SKIP]
        if time.monotonic() > deadline:
            return None
        if os.path.basename(folder) == "gptlab_drills" and "p19.py" in files:
            with contextlib.suppress(OSError):
                return {n: open(os.path.join(folder, n)).read() for n in files if n.endswith(".py")}
        for name in files:
            if name.startswith("gptlab_drills") and name.endswith((".whl", ".zip")):
                with contextlib.suppress(OSError, zipfile.BadZipFile):
                    wheel = zipfile.ZipFile(os.path.join(folder, name))
                    members = [m for m in wheel.namelist() if m.startswith("gptlab_drills/")]
                    return {
                        m.rsplit("/", 1)[1]: wheel.read(m).decode()
                        for m in members
                        if m.endswith(".py")
                    }
    return None


def _exec(sources, name):
    lines = sources[name].splitlines()
    for line in [line for line in lines if line.startswith("from .")]:
        _exec(sources, line.split()[1][1:] + ".py")
    kept = "\n".join(line for line in lines if not line.startswith("from ."))
    exec(compile(kept, name, "exec"), globals())


found = _sources()
if found and "p19.py" in found:
    _exec(found, "p19.py")
