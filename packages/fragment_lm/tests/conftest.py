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

import math
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import Tensor
from torch.nn import functional

from gptlab_testkit import candidate, test_device

fragment = candidate("FRAGMENT_LM_MODULE")

State = dict[str, Tensor]

# A tiny fragment: 2 query heads per kv head, an epsilon that shows, a rotary base that
# turns fast, 4 experts with 2 per token in each of two layers.
SIZES: dict[str, Any] = {
    "vocab_size": 29,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "intermediate_size": 24,
    "max_position_embeddings": 64,
    "rope_theta": 100.0,
    "rms_norm_eps": 0.05,
    "num_experts": 4,
    "experts_per_token": 2,
}


def seeded_randn(shape: tuple[int, ...], generator: torch.Generator) -> Tensor:
    return torch.randn(shape, generator=generator)


class M10:
    """The candidate's builders, seeded weights and inputs, and the float64 oracle."""

    def config(self, **overrides: Any) -> Any:
        return fragment.FragmentConfig(**{**SIZES, **overrides})

    def plain(self, **overrides: Any) -> SimpleNamespace:
        """The oracle's own copy of a config (never the candidate's class)."""
        return SimpleNamespace(**{**SIZES, "tie_word_embeddings": True, **overrides})

    def checkpoint_shapes(self, config: Any) -> dict[str, tuple[int, ...]]:
        V, C, F = config.vocab_size, config.hidden_size, config.intermediate_size
        q = config.num_attention_heads * config.head_dim
        kv = config.num_key_value_heads * config.head_dim
        shapes = {"model.embed_tokens.weight": (V, C)}
        for i in range(config.num_hidden_layers):
            p = f"model.layers.{i}."
            shapes.update(
                {
                    p + "input_layernorm.weight": (C,),
                    p + "self_attn.q_proj.weight": (q, C),
                    p + "self_attn.k_proj.weight": (kv, C),
                    p + "self_attn.v_proj.weight": (kv, C),
                    p + "self_attn.o_proj.weight": (C, q),
                    p + "post_attention_layernorm.weight": (C,),
                    p + "mlp.gate.weight": (config.num_experts, C),
                }
            )
            for e in range(config.num_experts):
                shapes[f"{p}mlp.experts.{e}.gate_proj.weight"] = (F, C)
                shapes[f"{p}mlp.experts.{e}.up_proj.weight"] = (F, C)
                shapes[f"{p}mlp.experts.{e}.down_proj.weight"] = (C, F)
        shapes.update({"model.norm.weight": (C,), "lm_head.weight": (V, C)})
        return shapes

    def random_state(self, config: Any, seed: int, same_experts: bool = False) -> State:
        """Seeded weights: norm gains in [0.5, 1.5], embedding and routers N(0, 1), every
        other projection N(0, 0.3^2); the head is the embedding's tensor. With
        ``same_experts`` every expert of a layer holds expert 0's weights."""
        generator = torch.Generator().manual_seed(seed)
        state: State = {}
        for name, shape in self.checkpoint_shapes(config).items():
            if name.endswith("norm.weight"):
                tensor = torch.rand(shape, generator=generator) + 0.5
            elif name == "model.embed_tokens.weight" or name.endswith("mlp.gate.weight"):
                tensor = seeded_randn(shape, generator)
            else:
                tensor = seeded_randn(shape, generator) * 0.3
            state[name] = tensor
        if same_experts:
            for name in list(state):
                if ".mlp.experts." in name:
                    prefix, rest = name.split(".mlp.experts.")
                    state[name] = state[f"{prefix}.mlp.experts.0.{rest.split('.', 1)[1]}"]
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
        return {name: tensor.to(test_device()) for name, tensor in state.items()}

    def model(self, config: Any, seed: int = 0) -> Any:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = fragment.PaperFragmentLM(config)
        return model.to(test_device()).eval()

    def loaded(self, config: Any, state: State) -> Any:
        model = self.model(config, seed=99)
        model.load_state_dict(state, strict=True)
        return model

    def ids(self, batch: int, length: int, seed: int, vocab: int = SIZES["vocab_size"]) -> Tensor:
        generator = torch.Generator().manual_seed(seed)
        return torch.randint(0, vocab, (batch, length), generator=generator).to(test_device())

    def runs(self, starts: list[int], length: int) -> Tensor:
        """Contiguous positions ``[B, length]``, row b from ``starts[b]``."""
        rows = [torch.arange(s, s + length) for s in starts]
        return torch.stack(rows).to(test_device())

    # ---- the float64 oracle --------------------------------------------------------

    @staticmethod
    def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
        return weight * x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)

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
        """Causal by index; query head h reads kv head h // (H / H_kv)."""
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

    @staticmethod
    def swiglu(x: Tensor, s: State, prefix: str) -> Tensor:
        gate = x @ s[f"{prefix}gate_proj.weight"].T
        return (functional.silu(gate) * (x @ s[f"{prefix}up_proj.weight"].T)) @ s[
            f"{prefix}down_proj.weight"
        ].T

    def mixture(self, x: Tensor, s: State, k: int, prefix: str) -> tuple[Tensor, Tensor, Tensor]:
        """(output [..., C], router logits [N, E], counts [E]) token by token."""
        router = s[f"{prefix}gate.weight"]
        rows = x.reshape(-1, router.shape[1])
        logits = rows @ router.T
        counts = torch.zeros(router.shape[0], dtype=torch.long)
        out = torch.zeros_like(rows)
        for n in range(rows.shape[0]):
            p = logits[n].softmax(dim=-1)
            values = p.tolist()
            chosen = sorted(range(len(values)), key=lambda e: (-values[e], e))[:k]
            total = sum(p[e] for e in chosen)
            for e in chosen:
                out[n] += p[e] / total * self.swiglu(rows[n], s, f"{prefix}experts.{e}.")
                counts[e] += 1
        return out.reshape(x.shape), logits, counts

    def forward(self, config: Any, state: State, ids: Tensor, positions: Tensor) -> SimpleNamespace:
        """Logits ``[B, T, V]`` and each layer's router logits and counts, computed in
        float64."""
        s = {name: t.double().cpu() for name, t in state.items()}
        ids, positions = ids.cpu(), positions.cpu()
        B, T = ids.shape
        H, K, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        eps, theta = config.rms_norm_eps, config.rope_theta

        def heads(t: Tensor, n: int) -> Tensor:
            return t.reshape(B, T, n, D).transpose(1, 2)

        x = s["model.embed_tokens.weight"][ids]
        router_logits, counts = [], []
        for i in range(config.num_hidden_layers):
            p = f"model.layers.{i}."
            normed = self.rms_norm(x, s[p + "input_layernorm.weight"], eps)
            q = self.rope(heads(normed @ s[p + "self_attn.q_proj.weight"].T, H), positions, theta)
            k = self.rope(heads(normed @ s[p + "self_attn.k_proj.weight"].T, K), positions, theta)
            v = heads(normed @ s[p + "self_attn.v_proj.weight"].T, K)
            y = self.attention(q, k, v).transpose(1, 2).reshape(B, T, H * D)
            h = x + y @ s[p + "self_attn.o_proj.weight"].T
            normed = self.rms_norm(h, s[p + "post_attention_layernorm.weight"], eps)
            mixed, logits, count = self.mixture(normed, s, config.experts_per_token, p + "mlp.")
            router_logits.append(logits)
            counts.append(count)
            x = h + mixed
        x = self.rms_norm(x, s["model.norm.weight"], eps)
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
