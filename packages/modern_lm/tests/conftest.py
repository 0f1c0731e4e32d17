"""Fixtures for the modern_lm suite (pytest loads this; tests never import it).

Every test reaches the candidate through ``MODERN_LM_MODULE`` and reads or writes its
weights only through the contract's checkpoint paths (``state_dict`` keys), so a model
that stores fused projections behind those keys is graded like the reference. The
oracle is the decomposed M02 layer (``gptlab_testkit.models``): RMSNorm in fp32,
split-half RoPE on q and k, an explicit repeated-K/V attention with a manual softmax,
SwiGLU.
"""

from __future__ import annotations

import dataclasses

import pytest
from torch import Tensor

from gptlab_testkit import candidate, models, test_device

lm = candidate("MODERN_LM_MODULE")

State = dict[str, Tensor]

# Small sizes with every M02 feature visible (the testkit's tiny decoder).
SIZES = models.TINY_DECODER


class M02:
    """The candidate's config and model, checkpoint states, and the decomposed oracle."""

    def config(self, **overrides: object):
        return lm.ModernLMConfig(**{**SIZES, **overrides})

    def sizes(self, config) -> dict[str, int]:
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}

    # ---- checkpoint paths --------------------------------------------------------------

    def checkpoint_shapes(self, config) -> dict[str, tuple[int, ...]]:
        """The contract's state-dict keys and shapes (Llama's names)."""
        return models.checkpoint_shapes(config)

    def random_state(self, config, seed: int, scale: float = 0.3) -> State:
        """Seeded weights under the checkpoint names: projections N(0, scale^2), norm gains
        in [0.5, 1.5] (so a gain read from the wrong path shows), embedding N(0, 1)."""
        shapes = self.checkpoint_shapes(config)
        return models.seeded_checkpoint(shapes, seed, scale=scale, tie=config.tie_word_embeddings)

    def model(self, config, seed: int = 0):
        """A fresh candidate model (seeded construction) on the test device, eval mode."""
        return models.seeded_build(lambda: lm.ModernLM(config), seed).to(test_device()).eval()

    def loaded(self, config, state: State):
        """A candidate model holding ``state`` through a strict load."""
        model = self.model(config, seed=99)
        model.load_state_dict(state, strict=True)
        return model

    def ids(self, batch: int, length: int, vocab: int, seed: int) -> Tensor:
        return models.seeded_ids(batch, length, vocab, seed)

    def positions(self, origins: list[int], length: int) -> Tensor:
        """Contiguous rows: row b holds origins[b], origins[b] + 1, ..."""
        return models.contiguous_positions(origins, length)

    def gapped_positions(self, batch: int, length: int, seed: int, top: int = 60) -> Tensor:
        """Increasing positions with random gaps: where contiguous rows hide a model that
        derives positions from token indices."""
        return models.gapped_positions(batch, length, seed, top)

    # ---- the decomposed oracle -----------------------------------------------------------

    rms_norm = staticmethod(models.rms_norm)
    swiglu = staticmethod(models.swiglu)

    def logits(self, config, state: State, ids: Tensor, positions: Tensor | None = None) -> Tensor:
        if positions is None:
            positions = self.positions([0] * ids.shape[0], ids.shape[1])
        x = state["model.embed_tokens.weight"][ids]
        for index in range(config.num_hidden_layers):
            x = models.decoder_layer(config, state, index, x, positions)
        x = self.rms_norm(x, state["model.norm.weight"], config.rms_norm_eps)
        return x @ state["lm_head.weight"].T


@pytest.fixture(scope="session")
def m02() -> M02:
    """The candidate's config and model builders and the decomposed oracle."""
    return M02()
