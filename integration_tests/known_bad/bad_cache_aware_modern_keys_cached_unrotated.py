"""Keys are cached unrotated and rotated when read (at start + slot): a cache of M02's rotated keys is rotated twice."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_gqa_cache"
CLAUSE = "M03.7"

FORWARD = """    def forward(self, input_ids, positions, past_key_values=None, cache_lengths=None,
                cache_start_positions=None, use_cache=False):
        if isinstance(cache_start_positions, Tensor) and cache_start_positions.dim() == 1:
            self._origin = cache_start_positions[:, None]
        elif isinstance(positions, Tensor) and positions.dim() == 2:
            self._origin = positions[:, :1]
        return super().forward(input_ids, positions, past_key_values, cache_lengths,
                               cache_start_positions, use_cache)

    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:"""

SLOT_ROTARY = (
    "return ((*self.rotary(positions, dtype), lambda S: self.rotary("
    "self._origin + torch.arange(S, device=positions.device), dtype)),)"
)

advanced = mutated_module(
    "cache_aware_lm.advanced",
    [
        ("    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:", FORWARD),
        ("return (self.rotary(positions, dtype),)", SLOT_ROTARY),
        ("cos, sin = rotary", "cos, sin, slot_rotary = rotary"),
        # mistake: the cache holds raw keys; rotation happens on every read
        (
            "k = apply_rotary(split_heads(self.k_proj(x), self.n_kv_heads), cos, sin)",
            "k = split_heads(self.k_proj(x), self.n_kv_heads)",
        ),
        (
            "attend(q, keys, values, mask)",
            "attend(q, apply_rotary(keys, *slot_rotary(keys.shape[2])), values, mask)",
        ),
    ],
)
globals().update(export_with("cache_aware_lm.advanced", advanced))
