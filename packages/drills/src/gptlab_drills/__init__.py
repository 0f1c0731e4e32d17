"""gptlab's repair lane: one small graded drill per invariant the mechanisms route to.

Each drill is a module named by its id (`gptlab_drills.p19` holds `decode_attention`);
`gptlab_drills.catalogue` lists them (title, time box, graded names, probes).
"""

from . import catalogue
from .catalogue import DRILLS, Drill, find

__all__ = ["DRILLS", "Drill", "catalogue", "find"]
