"""M03's two branches and the grade target of each. Plain data.

The diagnostic freezes the branch from P19 at its deadline (`route.m03_branch`, recorded
once with the route): passed, the advanced branch, M03 built cache-aware over the learner's
M02 (graded as `cache_aware_modern`: the cache contract plus "the factories build M02's
checkpoint and logits, with a K/V-head cache"); else the simple branch (`cache_aware_lm`:
any cache-aware model). With no route recorded, `M03` names the simple branch's target and
the advanced one is started by its own name.
"""

from __future__ import annotations

M03 = "M03"
ADVANCED, SIMPLE = "advanced", "simple"
M03_TARGETS = {ADVANCED: "cache_aware_modern", SIMPLE: "cache_aware_lm"}
UNROUTED_TARGET = M03_TARGETS[SIMPLE]  # `start M03` before the diagnostic (as before branches)


def m03_target(branch: str | None) -> str:
    """The package `M03` grades on the recorded branch (None: no route yet)."""
    return M03_TARGETS.get(branch or "", UNROUTED_TARGET)


def names_m03(name: str) -> bool:
    """Did the learner type M03's kit name (any case), rather than a package?"""
    return name.upper() == M03
