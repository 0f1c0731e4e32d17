"""Fixtures for the moe_lm suite (pytest loads this; tests never import it).

Every test reaches the candidate through ``MOE_LM_MODULE`` and reads or writes weights only
through the contract's state-dict paths, so a block that stores fused experts behind those
keys is graded like the reference. The oracles below are written out token by token in
float64: the mixture (softmax over every expert, the k most probable with the lower index
first among equal probabilities, weights renormalised, SwiGLU experts), and the decomposed
M02 decoder (RMSNorm in fp32, split-half RoPE, repeated-K/V causal attention) around it.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from torch import Tensor
from torch.nn import functional

from gptlab_testkit import candidate, test_device

moe = candidate("MOE_LM_MODULE")

State = dict[str, Tensor]

# The block's default sizes: C hidden, F intermediate, E experts.
C, F, E = 16, 24, 4

# The LM's sizes: M02's small config (2 query heads per kv head, an epsilon that shows, a
# rotary base that turns fast) with 4 experts, 2 per token, in the second of two layers.
LM_SIZES = {
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
        shapes = {f"{prefix}gate.weight": (experts, hidden)}
        for e in range(experts):
            shapes[f"{prefix}experts.{e}.gate_proj.weight"] = (inter, hidden)
            shapes[f"{prefix}experts.{e}.up_proj.weight"] = (inter, hidden)
            shapes[f"{prefix}experts.{e}.down_proj.weight"] = (hidden, inter)
        return shapes

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
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            block = moe.SparseMoE(hidden, inter, experts, k)
        return block.to(test_device())

    def loaded_block(self, state: State, k: int = 2):
        experts, hidden = state["gate.weight"].shape
        inter = state["experts.0.gate_proj.weight"].shape[0]
        block = self.block(hidden, inter, experts, k, seed=99)
        block.load_state_dict(state, strict=True)
        return block

    def tokens(self, batch: int, length: int, seed: int, hidden: int = C) -> Tensor:
        return seeded((batch, length, hidden), seed)

    @staticmethod
    def swiglu(x: Tensor, state: State, prefix: str) -> Tensor:
        gate = x @ state[f"{prefix}gate_proj.weight"].T
        up = x @ state[f"{prefix}up_proj.weight"].T
        return (functional.silu(gate) * up) @ state[f"{prefix}down_proj.weight"].T

    def choose(self, probabilities: Tensor, k: int) -> list[int]:
        """The k most probable experts of one token, the lower index first among equals."""
        values = probabilities.tolist()
        return sorted(range(len(values)), key=lambda e: (-values[e], e))[:k]

    def mixture(self, x: Tensor, state: State, k: int, prefix: str = "") -> tuple[Tensor, Tensor]:
        """The float64 token-by-token oracle: (output [..., C], counts [E])."""
        s = {name: t.double() for name, t in state.items()}
        router = s[f"{prefix}gate.weight"]
        rows = x.double().reshape(-1, router.shape[1])
        counts = torch.zeros(router.shape[0], dtype=torch.long)
        out = torch.zeros_like(rows)
        for n in range(rows.shape[0]):
            probabilities = (rows[n] @ router.T).softmax(dim=-1)
            chosen = self.choose(probabilities, k)
            total = sum(probabilities[e] for e in chosen)
            for e in chosen:
                out[n] += (
                    probabilities[e] / total * self.swiglu(rows[n], s, f"{prefix}experts.{e}.")
                )
                counts[e] += 1
        return out.reshape(x.shape), counts.to(x.device)

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
        V, Cm, Fm = config.vocab_size, config.hidden_size, config.intermediate_size
        q = config.num_attention_heads * config.head_dim
        kv = config.num_key_value_heads * config.head_dim
        shapes = {"model.embed_tokens.weight": (V, Cm)}
        for i in range(config.num_hidden_layers):
            p = f"model.layers.{i}."
            shapes.update(
                {
                    p + "input_layernorm.weight": (Cm,),
                    p + "self_attn.q_proj.weight": (q, Cm),
                    p + "self_attn.k_proj.weight": (kv, Cm),
                    p + "self_attn.v_proj.weight": (kv, Cm),
                    p + "self_attn.o_proj.weight": (Cm, q),
                    p + "post_attention_layernorm.weight": (Cm,),
                }
            )
            if self.moe_layer(config, i):
                shapes.update(self.block_shapes(Cm, Fm, config.num_experts, p + "mlp."))
            else:
                shapes.update(
                    {
                        p + "mlp.gate_proj.weight": (Fm, Cm),
                        p + "mlp.up_proj.weight": (Fm, Cm),
                        p + "mlp.down_proj.weight": (Cm, Fm),
                    }
                )
        shapes.update({"model.norm.weight": (Cm,), "lm_head.weight": (V, Cm)})
        return shapes

    def random_state(self, config, seed: int) -> State:
        """Seeded weights under the checkpoint names: norm gains in [0.5, 1.5], the
        embedding and routers N(0, 1), every other projection N(0, 0.3^2)."""
        generator = torch.Generator().manual_seed(seed)
        state: State = {}
        for name, shape in self.checkpoint_shapes(config).items():
            if name.endswith("norm.weight"):
                tensor = torch.rand(shape, generator=generator) + 0.5
            elif name == "model.embed_tokens.weight" or name.endswith("mlp.gate.weight"):
                tensor = torch.randn(shape, generator=generator)
            else:
                tensor = torch.randn(shape, generator=generator) * 0.3
            state[name] = tensor
        if config.tie_word_embeddings:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        return {name: tensor.to(test_device()) for name, tensor in state.items()}

    def lm(self, config, seed: int = 0):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = moe.MoECausalLM(config)
        return model.to(test_device()).eval()

    def loaded_lm(self, config, state: State):
        model = self.lm(config, seed=99)
        model.load_state_dict(state, strict=True)
        return model

    def ids(self, batch: int, length: int, vocab: int, seed: int) -> Tensor:
        generator = torch.Generator().manual_seed(seed)
        return torch.randint(0, vocab, (batch, length), generator=generator).to(test_device())

    def gapped_positions(self, batch: int, length: int, seed: int, top: int = 60) -> Tensor:
        generator = torch.Generator().manual_seed(seed)
        rows = [
            torch.randperm(top, generator=generator)[:length].sort().values for _ in range(batch)
        ]
        return torch.stack(rows).to(test_device())

    @staticmethod
    def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
        x64 = x.double()
        return weight.double() * x64 / torch.sqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps)

    @staticmethod
    def rope(x: Tensor, positions: Tensor, theta: float) -> Tensor:
        D = x.shape[-1]
        inv_freq = theta ** -(torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)
        angles = positions.double()[:, None, :, None] * inv_freq
        first, second = x[..., : D // 2], x[..., D // 2 :]
        cos, sin = angles.cos(), angles.sin()
        return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)

    @staticmethod
    def attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        H, K, T, D = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
        group = H // K
        future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        heads = []
        for h in range(H):
            scores = q[:, h] @ k[:, h // group].transpose(-1, -2) / math.sqrt(D)
            heads.append(
                scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v[:, h // group]
            )
        return torch.stack(heads, dim=1)

    def logits(self, config, state: State, ids: Tensor, positions: Tensor) -> Tensor:
        """The decomposed decoder in float64: M02's layers, the mixture in MoE layers."""
        s = {name: t.double() for name, t in state.items()}
        B, T = ids.shape
        H, K, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim

        def heads(t: Tensor, n: int) -> Tensor:
            return t.reshape(B, T, n, D).transpose(1, 2)

        x = s["model.embed_tokens.weight"][ids]
        for i in range(config.num_hidden_layers):
            p = f"model.layers.{i}."
            normed = self.rms_norm(x, s[p + "input_layernorm.weight"], config.rms_norm_eps)
            q = self.rope(
                heads(normed @ s[p + "self_attn.q_proj.weight"].T, H), positions, config.rope_theta
            )
            k = self.rope(
                heads(normed @ s[p + "self_attn.k_proj.weight"].T, K), positions, config.rope_theta
            )
            v = heads(normed @ s[p + "self_attn.v_proj.weight"].T, K)
            y = self.attention(q, k, v).transpose(1, 2).reshape(B, T, H * D)
            h = x + y @ s[p + "self_attn.o_proj.weight"].T
            normed = self.rms_norm(h, s[p + "post_attention_layernorm.weight"], config.rms_norm_eps)
            if self.moe_layer(config, i):
                mixed, _ = self.mixture(normed, s, config.experts_per_token, p + "mlp.")
            else:
                mixed = self.swiglu(normed, s, p + "mlp.")
            x = h + mixed
        x = self.rms_norm(x, s["model.norm.weight"], config.rms_norm_eps)
        return x @ s["lm_head.weight"].T


@pytest.fixture(scope="session")
def m05() -> M05:
    """The candidate's builders and the float64 oracles."""
    return M05()
