"""Read the reference's source from where it is installed and exec it, with no import
at all (so no import refuser sees it): the package folder in site-packages (a nox
venv), or the folder an editable install's .pth file names (the dev venv). Its
relative imports are read and exec'd the same way."""

import glob
import os
import sys

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "the reference's source read from its installed package folder and exec'd"
SAYS = "does not define 'decode_attention'"  # no reference source was found
EARNED = "_honest_p19_zeros.py"  # no more than the same values earn honestly


def _places() -> list[str]:
    places = []
    venv = os.path.dirname(os.path.dirname(sys.executable))  # the interpreter's venv
    for folder in [*sys.path, *glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))]:
        places += glob.glob(os.path.join(folder, "gptlab_drills", "p19.py"))
        for pth in glob.glob(os.path.join(folder, "*gptlab_drills*.pth")):
            with open(pth) as lines:
                places += [os.path.join(line.strip(), "gptlab_drills", "p19.py") for line in lines]
    return places


def _exec(place: str) -> None:
    with open(place) as file:
        lines = file.read().splitlines()
    for line in [line for line in lines if line.startswith("from .")]:
        _exec(os.path.join(os.path.dirname(place), line.split()[1][1:] + ".py"))
    kept = "\n".join(line for line in lines if not line.startswith("from ."))
    exec(compile(kept, place, "exec"), globals())


for place in _places():
    try:
        _exec(place)
    except OSError:
        continue
    break
