"""The factories build the GPT-2-shaped cache-aware model (fused biased qkv, learned positions), not M02's."""

from __future__ import annotations

import cache_aware_lm
from gptlab_testkit.mutants import export_with

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_checkpoint"
CLAUSE = "M03.2"

# mistake: any cache-aware model passes the ten checks; this one is not M02's
globals().update(export_with("cache_aware_lm.advanced", cache_aware_lm))
