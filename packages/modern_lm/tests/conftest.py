"""Fixtures for the modern_lm suite (pytest loads this; tests never import it).

Every test reaches the candidate through ``MODERN_LM_MODULE`` and reads or writes its
weights only through the contract's checkpoint paths (``state_dict`` keys), so a model
that stores fused projections behind those keys is graded like the reference. The
oracle below is the decomposed M02 layer: RMSNorm in fp32, split-half RoPE on q and k,
an explicit repeated-K/V attention with a manual softmax, SwiGLU.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch import Tensor

from gptlab_testkit import candidate, test_device

lm = candidate("MODERN_LM_MODULE")

State = dict[str, Tensor]

# Small sizes with every M02 feature visible: 2 query heads per kv head, an epsilon
# large enough that dropping it shows, a rotary base small enough that angles turn fast.
SIZES = {
    "vocab_size": 23,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "intermediate_size": 40,
    "max_position_embeddings": 64,
    "rope_theta": 100.0,
    "rms_norm_eps": 0.05,
}


class M02:
    """The candidate's config and model, checkpoint states, and the decomposed oracle."""

    def config(self, **overrides: object):
        return lm.ModernLMConfig(**{**SIZES, **overrides})

    def sizes(self, config) -> dict[str, int]:
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}

    # ---- checkpoint paths --------------------------------------------------------------

    def checkpoint_shapes(self, config) -> dict[str, tuple[int, ...]]:
        """The contract's state-dict keys and shapes (Llama's names)."""
        V, C, F = config.vocab_size, config.hidden_size, config.intermediate_size
        q = config.num_attention_heads * config.head_dim
        kv = config.num_key_value_heads * config.head_dim
        layer = {
            "input_layernorm.weight": (C,),
            "self_attn.q_proj.weight": (q, C),
            "self_attn.k_proj.weight": (kv, C),
            "self_attn.v_proj.weight": (kv, C),
            "self_attn.o_proj.weight": (C, q),
            "post_attention_layernorm.weight": (C,),
            "mlp.gate_proj.weight": (F, C),
            "mlp.up_proj.weight": (F, C),
            "mlp.down_proj.weight": (C, F),
        }
        shapes = {"model.embed_tokens.weight": (V, C)}
        for i in range(config.num_hidden_layers):
            shapes.update({f"model.layers.{i}.{name}": s for name, s in layer.items()})
        shapes.update({"model.norm.weight": (C,), "lm_head.weight": (V, C)})
        return shapes

    def random_state(self, config, seed: int, scale: float = 0.3) -> State:
        """Seeded weights under the checkpoint names: projections N(0, scale^2), norm gains
        in [0.5, 1.5] (so a gain read from the wrong path shows), embedding N(0, 1)."""
        generator = torch.Generator().manual_seed(seed)
        state: State = {}
        for name, shape in self.checkpoint_shapes(config).items():
            if name.endswith("norm.weight"):
                tensor = torch.rand(shape, generator=generator) + 0.5
            elif name == "model.embed_tokens.weight":
                tensor = torch.randn(shape, generator=generator)
            else:
                tensor = torch.randn(shape, generator=generator) * scale
            state[name] = tensor
        if config.tie_word_embeddings:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        return {name: tensor.to(test_device()) for name, tensor in state.items()}

    def model(self, config, seed: int = 0):
        """A fresh candidate model (seeded construction) on the test device, eval mode."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = lm.ModernLM(config)
        return model.to(test_device()).eval()

    def loaded(self, config, state: State):
        """A candidate model holding ``state`` through a strict load."""
        model = self.model(config, seed=99)
        model.load_state_dict(state, strict=True)
        return model

    def ids(self, batch: int, length: int, vocab: int, seed: int) -> Tensor:
        generator = torch.Generator().manual_seed(seed)
        return torch.randint(0, vocab, (batch, length), generator=generator).to(test_device())

    def positions(self, origins: list[int], length: int) -> Tensor:
        """Contiguous rows: row b holds origins[b], origins[b] + 1, ..."""
        device = test_device()
        return torch.tensor(origins, device=device)[:, None] + torch.arange(length, device=device)

    def gapped_positions(self, batch: int, length: int, seed: int, top: int = 60) -> Tensor:
        """Increasing positions with random gaps (packed or padded rows): a model that
        derives positions from token indices instead of reading them differs here, where
        contiguous rows hide it (RoPE only sees differences)."""
        generator = torch.Generator().manual_seed(seed)
        rows = [
            torch.randperm(top, generator=generator)[:length].sort().values for _ in range(batch)
        ]
        return torch.stack(rows).to(test_device())

    # ---- the decomposed oracle -----------------------------------------------------------

    @staticmethod
    def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))  # float32, or float64
        normed = x32 / torch.sqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
        return weight * normed.to(x.dtype)

    @staticmethod
    def rope(x: Tensor, positions: Tensor, theta: float) -> Tensor:
        """Split-half rotation of [B, H, T, D] at positions [B, T] (angles in float64)."""
        D = x.shape[-1]
        inv_freq = theta ** -(torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)
        angles = positions.to(torch.float64)[:, None, :, None] * inv_freq  # [B, 1, T, D/2]
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        first, second = x[..., : D // 2], x[..., D // 2 :]
        return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)

    @staticmethod
    def attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """Causal attention of q [B, H, T, D] over k, v [B, K, T, D]: query head h reads
        kv head h // (H / K), written out head by head; manual softmax."""
        H, K, T, D = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
        group = H // K
        heads = []
        for h in range(H):
            scores = q[:, h] @ k[:, h // group].transpose(-1, -2) / math.sqrt(D)
            future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
            weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
            heads.append(weights @ v[:, h // group])
        return torch.stack(heads, dim=1)

    @staticmethod
    def swiglu(x: Tensor, state: State, prefix: str) -> Tensor:
        gate = x @ state[f"{prefix}gate_proj.weight"].T
        up = x @ state[f"{prefix}up_proj.weight"].T
        return (torch.nn.functional.silu(gate) * up) @ state[f"{prefix}down_proj.weight"].T

    def layer(self, config, state: State, index: int, x: Tensor, positions: Tensor) -> Tensor:
        """One pre-norm decoder layer, decomposed, from the checkpoint tensors."""
        p = f"model.layers.{index}."
        B, T, _ = x.shape
        H, K, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim

        def heads(t: Tensor, n: int) -> Tensor:
            return t.reshape(B, T, n, D).transpose(1, 2)

        normed = self.rms_norm(x, state[p + "input_layernorm.weight"], config.rms_norm_eps)
        q = heads(normed @ state[p + "self_attn.q_proj.weight"].T, H)
        k = heads(normed @ state[p + "self_attn.k_proj.weight"].T, K)
        v = heads(normed @ state[p + "self_attn.v_proj.weight"].T, K)
        q, k = (
            self.rope(q, positions, config.rope_theta),
            self.rope(k, positions, config.rope_theta),
        )
        y = self.attention(q, k, v).transpose(1, 2).reshape(B, T, H * D)
        h = x + y @ state[p + "self_attn.o_proj.weight"].T
        normed = self.rms_norm(h, state[p + "post_attention_layernorm.weight"], config.rms_norm_eps)
        return h + self.swiglu(normed, state, p + "mlp.")

    def logits(self, config, state: State, ids: Tensor, positions: Tensor | None = None) -> Tensor:
        if positions is None:
            positions = self.positions([0] * ids.shape[0], ids.shape[1])
        x = state["model.embed_tokens.weight"][ids]
        for index in range(config.num_hidden_layers):
            x = self.layer(config, state, index, x, positions)
        x = self.rms_norm(x, state["model.norm.weight"], config.rms_norm_eps)
        return x @ state["lm_head.weight"].T


@pytest.fixture(scope="session")
def m02() -> M02:
    """The candidate's config and model builders and the decomposed oracle."""
    return M02()
