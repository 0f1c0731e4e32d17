"""Queries and keys are rotated at position - cache_start (the slot), not at the absolute position."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_gqa_cache"
CLAUSE = "M03.6"

FORWARD = """    def forward(self, input_ids, positions, past_key_values=None, cache_lengths=None,
                cache_start_positions=None, use_cache=False):
        if isinstance(cache_start_positions, Tensor) and cache_start_positions.dim() == 1:
            self._origin = cache_start_positions[:, None]
        elif isinstance(positions, Tensor) and positions.dim() == 2:
            self._origin = positions[:, :1]
        return super().forward(input_ids, positions, past_key_values, cache_lengths,
                               cache_start_positions, use_cache)

    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:"""

advanced = mutated_module(
    "cache_aware_lm.advanced",
    [
        ("    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:", FORWARD),
        # mistake: cache-relative angles (consistent inside the model, so its own runs agree)
        (
            "return (self.rotary(positions, dtype),)",
            "return (self.rotary(positions - self._origin, dtype),)",
        ),
    ],
)
globals().update(export_with("cache_aware_lm.advanced", advanced))
