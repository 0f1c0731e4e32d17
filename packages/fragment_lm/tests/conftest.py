"""Fixtures for the fragment_lm suite (pytest loads this; tests never import it).

Every test reaches the candidate through ``FRAGMENT_LM_MODULE`` and sets weights only
through the contract's checkpoint names, so any module tree behind those names is graded
like the reference. The oracle is the fragment written out in float64, token by token for
the mixture: RMSNorm, split-half RoPE at the supplied positions (queries and keys, never
values), causal attention over explicitly repeated K/V heads, the top-k mixture (softmax
over every expert, the k most probable, weights renormalised), residuals, final norm and
the embedding as the head.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import Tensor

from gptlab_testkit import candidate, models, test_device

fragment = candidate("FRAGMENT_LM_MODULE")

State = dict[str, Tensor]

# A tiny fragment: 2 query heads per kv head, an epsilon that shows, a rotary base that
# turns fast, 4 experts with 2 per token in each of two layers.
SIZES: dict[str, Any] = {
    **models.TINY_DECODER,
    "vocab_size": 29,
    "intermediate_size": 24,
    "num_experts": 4,
    "experts_per_token": 2,
}


class M10:
    """The candidate's builders, seeded weights and inputs, and the float64 oracle."""

    def config(self, **overrides: Any) -> Any:
        return fragment.FragmentConfig(**{**SIZES, **overrides})

    def plain(self, **overrides: Any) -> SimpleNamespace:
        """The oracle's own copy of a config (never the candidate's class)."""
        return SimpleNamespace(**{**SIZES, "tie_word_embeddings": True, **overrides})

    def checkpoint_shapes(self, config: Any) -> dict[str, tuple[int, ...]]:
        C, F, E = config.hidden_size, config.intermediate_size, config.num_experts
        return models.checkpoint_shapes(config, lambda _, p: models.mixture_shapes(C, F, E, p))

    def random_state(self, config: Any, seed: int, same_experts: bool = False) -> State:
        """Seeded weights: norm gains in [0.5, 1.5], embedding and routers N(0, 1), every
        other projection N(0, 0.3^2); the head is the embedding's tensor. With
        ``same_experts`` every expert of a layer holds expert 0's weights."""
        state = models.seeded_checkpoint(self.checkpoint_shapes(config), seed, tie=True)
        if same_experts:
            for name in list(state):
                if ".mlp.experts." in name:
                    prefix, rest = name.split(".mlp.experts.")
                    state[name] = state[f"{prefix}.mlp.experts.0.{rest.split('.', 1)[1]}"]
        return state

    def model(self, config: Any, seed: int = 0) -> Any:
        built = models.seeded_build(lambda: fragment.PaperFragmentLM(config), seed)
        return built.to(test_device()).eval()

    def loaded(self, config: Any, state: State) -> Any:
        model = self.model(config, seed=99)
        model.load_state_dict(state, strict=True)
        return model

    def ids(self, batch: int, length: int, seed: int, vocab: int = SIZES["vocab_size"]) -> Tensor:
        return models.seeded_ids(batch, length, vocab, seed)

    def runs(self, starts: list[int], length: int) -> Tensor:
        """Contiguous positions ``[B, length]``, row b from ``starts[b]``."""
        return models.contiguous_positions(starts, length)

    # ---- the float64 oracle --------------------------------------------------------

    def forward(self, config: Any, state: State, ids: Tensor, positions: Tensor) -> SimpleNamespace:
        """Logits ``[B, T, V]`` and each layer's router logits and counts, computed in
        float64."""
        s = {name: t.double().cpu() for name, t in state.items()}
        ids, positions = ids.cpu(), positions.cpu()
        router_logits, counts = [], []

        def feed_forward(normed: Tensor, prefix: str) -> Tensor:
            mixed, logits, count = models.mixture(normed, s, config.experts_per_token, prefix)
            router_logits.append(logits)
            counts.append(count)
            return mixed

        x = s["model.embed_tokens.weight"][ids]
        for i in range(config.num_hidden_layers):
            x = models.decoder_layer(config, s, i, x, positions, feed_forward)
        x = models.rms_norm(x, s["model.norm.weight"], config.rms_norm_eps)
        device = test_device()
        return SimpleNamespace(  # float32 on the test device, as the candidate's
            logits=(x @ s["model.embed_tokens.weight"].T).float().to(device),
            router_logits=[logits.float().to(device) for logits in router_logits],
            expert_counts=[count.to(device) for count in counts],
        )

    def dense_logits(self, config: Any, state: State, ids: Tensor, positions: Tensor) -> Tensor:
        """The oracle with each layer's feed-forward the one SwiGLU of expert 0 (M02's)."""
        dense = dict(state)
        E = config.num_experts
        for i in range(config.num_hidden_layers):
            p = f"model.layers.{i}.mlp."
            dense[p + "gate.weight"] = torch.zeros_like(state[p + "gate.weight"])
            for e in range(E):
                for name in ("gate_proj", "up_proj", "down_proj"):
                    dense[f"{p}experts.{e}.{name}.weight"] = state[f"{p}experts.0.{name}.weight"]
        return self.forward(config, dense, ids, positions).logits

    # ---- caches -----------------------------------------------------------------------

    def poisoned_batch_cache(
        self, rows: list[Any], lengths: list[int], poison: float = 1.0e4
    ) -> tuple[tuple[tuple[Tensor, Tensor], ...], Tensor]:
        """Rows' own caches (each a B=1 cache) stacked into one batch cache whose slots
        past a row's length hold ``poison``; returns the cache and its lengths."""
        width = max(lengths) + 3
        layers = []
        for layer in range(len(rows[0])):
            pair = []
            for part in (0, 1):
                first = rows[0][layer][part]
                out = torch.full(
                    (len(rows), first.shape[1], width, first.shape[3]),
                    poison,
                    dtype=first.dtype,
                    device=first.device,
                )
                for b, (row, n) in enumerate(zip(rows, lengths, strict=True)):
                    out[b, :, :n] = row[layer][part][0, :, :n]
                pair.append(out)
            layers.append((pair[0], pair[1]))
        return tuple(layers), torch.tensor(lengths, dtype=torch.long, device=test_device())


@pytest.fixture(scope="session")
def m10() -> M10:
    """The candidate's builders and the float64 oracle."""
    return M10()
