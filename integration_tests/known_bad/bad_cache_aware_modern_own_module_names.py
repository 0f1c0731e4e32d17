"""M02's arithmetic under this package's own module names (blocks.N.attention.out_proj, ...)."""

from __future__ import annotations

from cache_aware_lm import modern
from gptlab_testkit.mutants import export_with

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_checkpoint"
CLAUSE = "M03.2"

# mistake: the modern variant's names: M02's checkpoint does not load into it as it is
globals().update(export_with("cache_aware_lm.advanced", modern))
