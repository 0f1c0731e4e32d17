"""Fixtures for the runtime_lm suite (pytest loads this; tests never import it).

Every test reaches the candidate through ``RUNTIME_LM_MODULE``, sets the attention context
with its ``set_attention_context`` before each forward, and hands weights only through
``load_weights`` under Llama's checkpoint names (a single-pass iterator over a list, so a
loader that reads its input twice sees nothing the second time). The oracle is M02's
decoder written out in float64 for one request at a time (``gptlab_testkit.models``):
RMSNorm, split-half RoPE at the given positions, causal GQA by row order with K/V repeated
per group, SwiGLU, final norm.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest
import torch
from torch import Tensor

from gptlab_testkit import candidate, models, test_device

rt = candidate("RUNTIME_LM_MODULE")

State = dict[str, Tensor]
Request = tuple[Tensor, Tensor]  # ids [T], positions [T]

# A small config: 2 query heads per kv head, an epsilon that shows, a fast rotary base.
SIZES = {**models.TINY_DECODER, "vocab_size": 29}


class M04:
    """The candidate's builders, checkpoints under Llama's names, flat batches, the oracle."""

    # ---- configs, checkpoints, models -------------------------------------------------

    def config(self, **overrides: object):
        return rt.RuntimeLMConfig(**{**SIZES, **overrides})

    def sizes(self, **overrides: object) -> SimpleNamespace:
        """The oracle's own copy of a config (never the candidate's class)."""
        return SimpleNamespace(**{**SIZES, "tie_word_embeddings": False, **overrides})

    def checkpoint_shapes(self, sizes: SimpleNamespace) -> dict[str, tuple[int, ...]]:
        """Llama's checkpoint: separate q/k/v and gate/up."""
        return models.checkpoint_shapes(sizes)

    def packed_shapes(self, sizes: SimpleNamespace, layers: range | None = None):
        """The model's own state-dict keys of ``layers`` (packed projections)."""
        C, F = sizes.hidden_size, sizes.intermediate_size
        H, K, D = sizes.num_attention_heads, sizes.num_key_value_heads, sizes.head_dim
        layers = range(sizes.num_hidden_layers) if layers is None else layers
        shapes: dict[str, tuple[int, ...]] = {}
        for i in layers:
            p = f"model.layers.{i}."
            shapes.update(
                {
                    p + "input_layernorm.weight": (C,),
                    p + "self_attn.qkv_proj.weight": ((H + 2 * K) * D, C),
                    p + "self_attn.o_proj.weight": (C, H * D),
                    p + "post_attention_layernorm.weight": (C,),
                    p + "mlp.gate_up_proj.weight": (2 * F, C),
                    p + "mlp.down_proj.weight": (C, F),
                }
            )
        return shapes

    def random_state(self, sizes: SimpleNamespace, seed: int) -> State:
        """Seeded weights under the checkpoint's names: norm gains in [0.5, 1.5], the
        embedding N(0, 1), every projection N(0, 0.3^2)."""
        shapes = self.checkpoint_shapes(sizes)
        return models.seeded_checkpoint(shapes, seed, tie=sizes.tie_word_embeddings)

    @staticmethod
    def pairs(state: State) -> Iterator[tuple[str, Tensor]]:
        """One pass over (name, tensor): what a streaming checkpoint reader gives."""
        return iter(list(state.items()))

    def model(self, config, seed: int = 0, prefix: str | None = None):
        args = (config,) if prefix is None else (config, prefix)
        return models.seeded_build(lambda: rt.RuntimeCausalLM(*args), seed).to(test_device()).eval()

    def loaded(self, config, state: State):
        model = self.model(config, seed=99)
        model.load_weights(self.pairs(state))
        return model

    # ---- flat batches -----------------------------------------------------------------

    def requests(
        self, lengths: list[int], seed: int, vocab: int = SIZES["vocab_size"]
    ) -> list[Request]:
        """One request per length: random ids at sorted, gapped positions in [0, 60)."""
        generator = torch.Generator().manual_seed(seed)
        made = []
        for n in lengths:
            ids = torch.randint(0, vocab, (n,), generator=generator)
            positions = torch.randperm(60, generator=generator)[:n].sort().values
            made.append((ids.to(test_device()), positions.to(test_device())))
        return made

    @staticmethod
    def offsets(lengths: list[int]) -> Tensor:
        return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], device=test_device())

    def flat(self, requests: list[Request]) -> tuple[Tensor, Tensor, Tensor]:
        """(ids [N], positions [N], query_start_loc [B+1]) of requests end to end."""
        ids = torch.cat([r[0] for r in requests])
        positions = torch.cat([r[1] for r in requests])
        return ids, positions, self.offsets([len(r[0]) for r in requests])

    def run(self, model, requests: list[Request], **kwargs: object):
        """Set the context of these requests, then one forward of their flat rows."""
        ids, positions, offsets = self.flat(requests)
        rt.set_attention_context(offsets)
        return model(ids, positions, **kwargs)

    # ---- the float64 oracle -----------------------------------------------------------

    def hidden(self, sizes, state: State, positions: Tensor, *, ids=None, embeds=None, layers=None):
        """One request's final hidden states [T, C] in float64 (``layers``: a range run
        without the final norm, for a stage's intermediates)."""
        s = {name: t.double() for name, t in state.items()}
        x = s["model.embed_tokens.weight"][ids] if embeds is None else embeds.double()
        x, positions = x[None], positions[None]  # the request as a batch of one
        for i in range(sizes.num_hidden_layers) if layers is None else layers:
            x = models.decoder_layer(sizes, s, i, x, positions)
        if layers is not None:
            return x[0]
        return models.rms_norm(x[0], s["model.norm.weight"], sizes.rms_norm_eps)

    def flat_hidden(self, sizes, state: State, requests: list[Request]) -> Tensor:
        """The oracle over each request alone, rows end to end [N, C]."""
        rows = [self.hidden(sizes, state, pos, ids=ids) for ids, pos in requests if len(ids)]
        return torch.cat(rows) if rows else torch.zeros(0, sizes.hidden_size, dtype=torch.float64)

    @staticmethod
    def logits(state: State, hidden: Tensor) -> Tensor:
        return hidden.double() @ state["lm_head.weight"].double().T


@pytest.fixture(scope="session")
def m04() -> M04:
    """The candidate's builders, flat batches and the float64 oracle."""
    return M04()
