"""The reference re-exported as the learner's work."""

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "the reference re-exported (from gptlab_drills.p19 import *)"
SAYS = "reached for gptlab_drills"

from gptlab_drills.p19 import *  # noqa: E402,F403
