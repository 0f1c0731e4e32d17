"""The reference under another name, built at run time."""

import importlib

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "the reference aliased through a name built at run time"
SAYS = "reached for gptlab_drills"

decode_attention = importlib.import_module("gptlab_" + "drills" + ".p19").decode_attention
