"""The factories return their models in training mode (no .eval())."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_checkpoint"
CLAUSE = "M03.1"

advanced = mutated_module(
    "cache_aware_lm.advanced",
    [
        # mistake: nn.Module starts in training mode; the contract's factories return eval
        (
            "        model = CacheAwareModernLM(TEST_CONFIG)\n    return model.eval()",
            "        model = CacheAwareModernLM(TEST_CONFIG)\n    return model",
        ),
        (
            "            model.lm_head.weight[EOS_TRANSITIONS.get(token, EOS_TOKEN_ID), token] = 1.0\n    return model.eval()",
            "            model.lm_head.weight[EOS_TRANSITIONS.get(token, EOS_TOKEN_ID), token] = 1.0\n    return model",
        ),
    ],
)
globals().update(export_with("cache_aware_lm.advanced", advanced))
