"""Fixtures for the moe_lm suite (pytest loads this; tests never import it).

Every test reaches the candidate through ``MOE_LM_MODULE`` and reads or writes weights only
through the contract's state-dict paths, so a block that stores fused experts behind those
keys is graded like the reference. The oracles below are written out token by token in
float64 (``gptlab_testkit.models``): the mixture (softmax over every expert, the k most
probable with the lower index first among equal probabilities, weights renormalised, SwiGLU
experts), and the decomposed M02 decoder (RMSNorm, split-half RoPE, repeated-K/V causal
attention) around it.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import Tensor

from gptlab_testkit import candidate, models, test_device

moe = candidate("MOE_LM_MODULE")

State = dict[str, Tensor]

# The block's default sizes: C hidden, F intermediate, E experts.
C, F, E = 16, 24, 4

# The LM's sizes: M02's small config (2 query heads per kv head, an epsilon that shows, a
# rotary base that turns fast) with 4 experts, 2 per token, in the second of two layers.
LM_SIZES = {
    **models.TINY_DECODER,
    "num_experts": 4,
    "experts_per_token": 2,
    "moe_layers": (1,),
}


def seeded(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=generator) * scale).to(test_device())


class M05:
    """The candidate's block and LM builders, seeded weights, and the float64 oracles."""

    # ---- the block -------------------------------------------------------------------

    def block_shapes(
        self, hidden: int = C, inter: int = F, experts: int = E, prefix: str = ""
    ) -> dict[str, tuple[int, ...]]:
        return models.mixture_shapes(hidden, inter, experts, prefix)

    def block_state(
        self, seed: int, hidden: int = C, inter: int = F, experts: int = E, router: float = 1.0
    ) -> State:
        """Seeded weights: router rows N(0, router^2) (distinct probabilities), experts
        N(0, 0.3^2) each their own."""
        state = {}
        for i, (name, shape) in enumerate(self.block_shapes(hidden, inter, experts).items()):
            scale = router if name == "gate.weight" else 0.3
            state[name] = seeded(shape, seed * 1000 + i, scale)
        return state

    def block(self, hidden: int = C, inter: int = F, experts: int = E, k: int = 2, seed: int = 0):
        """A fresh candidate block (seeded construction) on the test device."""
        block = models.seeded_build(lambda: moe.SparseMoE(hidden, inter, experts, k), seed)
        return block.to(test_device())

    def loaded_block(self, state: State, k: int = 2):
        experts, hidden = state["gate.weight"].shape
        inter = state["experts.0.gate_proj.weight"].shape[0]
        block = self.block(hidden, inter, experts, k, seed=99)
        block.load_state_dict(state, strict=True)
        return block

    def tokens(self, batch: int, length: int, seed: int, hidden: int = C) -> Tensor:
        return seeded((batch, length, hidden), seed)

    swiglu = staticmethod(models.swiglu)

    def mixture(self, x: Tensor, state: State, k: int, prefix: str = "") -> tuple[Tensor, Tensor]:
        """The float64 token-by-token oracle: (output [..., C], counts [E])."""
        s = {name: t.double() for name, t in state.items()}
        out, _, counts = models.mixture(x.double(), s, k, prefix)
        return out, counts.to(x.device)

    # ---- the LM ----------------------------------------------------------------------

    def config(self, **overrides: object):
        return moe.MoELMConfig(**{**LM_SIZES, **overrides})

    def plain_config(self, **overrides: object) -> SimpleNamespace:
        """The oracle's own copy of a config (never the candidate's class)."""
        return SimpleNamespace(**{**LM_SIZES, "tie_word_embeddings": False, **overrides})

    def moe_layer(self, config, index: int) -> bool:
        return config.moe_layers is None or index in config.moe_layers

    def checkpoint_shapes(self, config) -> dict[str, tuple[int, ...]]:
        """M02's keys and shapes, a MoE layer's mlp replaced by the router and experts."""
        Cm, Fm = config.hidden_size, config.intermediate_size

        def feed_forward(index: int, prefix: str) -> dict[str, tuple[int, ...]]:
            if self.moe_layer(config, index):
                return self.block_shapes(Cm, Fm, config.num_experts, prefix)
            return models.swiglu_shapes(Cm, Fm, prefix)

        return models.checkpoint_shapes(config, feed_forward)

    def random_state(self, config, seed: int) -> State:
        """Seeded weights under the checkpoint names: norm gains in [0.5, 1.5], the
        embedding and routers N(0, 1), every other projection N(0, 0.3^2)."""
        shapes = self.checkpoint_shapes(config)
        return models.seeded_checkpoint(shapes, seed, tie=config.tie_word_embeddings)

    def lm(self, config, seed: int = 0):
        return models.seeded_build(lambda: moe.MoECausalLM(config), seed).to(test_device()).eval()

    def loaded_lm(self, config, state: State):
        model = self.lm(config, seed=99)
        model.load_state_dict(state, strict=True)
        return model

    def ids(self, batch: int, length: int, vocab: int, seed: int) -> Tensor:
        return models.seeded_ids(batch, length, vocab, seed)

    def gapped_positions(self, batch: int, length: int, seed: int, top: int = 60) -> Tensor:
        return models.gapped_positions(batch, length, seed, top)

    def logits(self, config, state: State, ids: Tensor, positions: Tensor) -> Tensor:
        """The decomposed decoder in float64: M02's layers, the mixture in MoE layers."""
        s = {name: t.double() for name, t in state.items()}

        def feed_forward(normed: Tensor, prefix: str) -> Tensor:
            return models.mixture(normed, s, config.experts_per_token, prefix)[0]

        x = s["model.embed_tokens.weight"][ids]
        for i in range(config.num_hidden_layers):
            mixed = feed_forward if self.moe_layer(config, i) else None
            x = models.decoder_layer(config, s, i, x, positions, mixed)
        x = models.rms_norm(x, s["model.norm.weight"], config.rms_norm_eps)
        return x @ s["lm_head.weight"].T


@pytest.fixture(scope="session")
def m05() -> M05:
    """The candidate's builders and the float64 oracles."""
    return M05()
