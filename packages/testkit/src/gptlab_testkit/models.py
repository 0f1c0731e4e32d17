"""The reference models a suite runs a candidate against.

Two kinds: the cache-aware model modules the collaborator suites run against, and the
pieces every tiny Llama-style build suite shares (modern_lm, moe_lm, runtime_lm,
fragment_lm): its small sizes, its checkpoint's names and shapes, seeded weights,
inputs and constructions, and the decomposed oracle (RMSNorm, split-half RoPE, causal
attention over repeated K/V heads, SwiGLU, the top-k mixture), written out so a
candidate is checked against plain arithmetic, never against its own layers.

The contract suites run against the module `CACHE_AWARE_LM_MODULE` selects. When
that is the reference, they also run against the reference's modern variant
(grouped-query attention, rotary positions), so every collaborator suite proves
itself on both cache layouts (H_kv == H and H_kv < H).
When `CACHE_AWARE_MODERN_MODULE` (M03's advanced branch) names a candidate, the
cache_aware_lm contract suite runs against that candidate alone.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

import torch
from torch import Tensor
from torch.nn import functional

from gptlab_testkit.candidates import candidate, is_reference
from gptlab_testkit.tensors import test_device

MODERN_VARIANT = "cache_aware_lm.modern"
# A file whose tests run on these modules names this variable too (grade selects it).
ADVANCED_VARIABLE = "CACHE_AWARE_MODERN_MODULE"

State = dict[str, Tensor]
Shapes = dict[str, tuple[int, ...]]
Built = TypeVar("Built")


def cache_aware_modules() -> dict[str, ModuleType]:
    """{id: module} exposing make_test_model / make_eos_test_model, for parametrize."""
    if not is_reference(ADVANCED_VARIABLE):  # M03's advanced branch graded on the same tests
        return {"candidate": candidate(ADVANCED_VARIABLE)}
    selected = candidate("CACHE_AWARE_LM_MODULE")
    if not is_reference("CACHE_AWARE_LM_MODULE"):
        return {"candidate": selected}
    return {"reference": selected, "modern": importlib.import_module(MODERN_VARIANT)}


# -- a tiny decoder: sizes, checkpoint, seeded weights, inputs and constructions

# Every Llama feature visible at a glance: 2 query heads per kv head, an epsilon large
# enough that dropping it shows, a rotary base small enough that angles turn fast.
TINY_DECODER: dict[str, Any] = {
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


def swiglu_shapes(hidden: int, intermediate: int, prefix: str) -> Shapes:
    """One SwiGLU feed-forward's keys (gate, up, down) under ``prefix``."""
    return {
        f"{prefix}gate_proj.weight": (intermediate, hidden),
        f"{prefix}up_proj.weight": (intermediate, hidden),
        f"{prefix}down_proj.weight": (hidden, intermediate),
    }


def mixture_shapes(hidden: int, intermediate: int, experts: int, prefix: str) -> Shapes:
    """A top-k mixture's keys: the router (``gate``), then each expert's SwiGLU."""
    shapes: Shapes = {f"{prefix}gate.weight": (experts, hidden)}
    for e in range(experts):
        shapes.update(swiglu_shapes(hidden, intermediate, f"{prefix}experts.{e}."))
    return shapes


def checkpoint_shapes(
    config: Any, feed_forward: Callable[[int, str], Shapes] | None = None
) -> Shapes:
    """Llama's checkpoint keys and shapes, in its order; ``feed_forward(index, prefix)``
    gives a layer's ``mlp.`` keys (default: one SwiGLU)."""
    V, C = config.vocab_size, config.hidden_size
    q = config.num_attention_heads * config.head_dim
    kv = config.num_key_value_heads * config.head_dim
    shapes: Shapes = {"model.embed_tokens.weight": (V, C)}
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
            }
        )
        if feed_forward is None:
            shapes.update(swiglu_shapes(C, config.intermediate_size, p + "mlp."))
        else:
            shapes.update(feed_forward(i, p + "mlp."))
    shapes.update({"model.norm.weight": (C,), "lm_head.weight": (V, C)})
    return shapes


def seeded_checkpoint(shapes: Shapes, seed: int, *, scale: float = 0.3, tie: bool) -> State:
    """Seeded weights under ``shapes``' names, drawn in their order: norm gains in
    [0.5, 1.5] (a gain read from the wrong path shows), the embedding and any router
    (``mlp.gate.weight``) N(0, 1), every other projection N(0, scale^2). With ``tie``
    the head is the embedding's tensor. On the test device."""
    generator = torch.Generator().manual_seed(seed)
    state: State = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            tensor = torch.rand(shape, generator=generator) + 0.5
        elif name == "model.embed_tokens.weight" or name.endswith("mlp.gate.weight"):
            tensor = torch.randn(shape, generator=generator)
        else:
            tensor = torch.randn(shape, generator=generator) * scale
        state[name] = tensor
    if tie:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    return {name: tensor.to(test_device()) for name, tensor in state.items()}


def seeded_build(build: Callable[[], Built], seed: int) -> Built:
    """``build()`` under a forked, seeded RNG: the same construction every time, and the
    test's own random state untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def seeded_ids(batch: int, length: int, vocab: int, seed: int) -> Tensor:
    """Token ids ``[batch, length]`` below ``vocab``, on the test device."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, length), generator=generator).to(test_device())


def contiguous_positions(starts: Sequence[int], length: int) -> Tensor:
    """Contiguous rows ``[B, length]``: row b holds starts[b], starts[b] + 1, ..."""
    device = test_device()
    return torch.tensor(list(starts), device=device)[:, None] + torch.arange(length, device=device)


def gapped_positions(batch: int, length: int, seed: int, top: int = 60) -> Tensor:
    """Increasing positions below ``top`` with random gaps (packed or padded rows): a
    model that derives positions from token indices instead of reading them differs
    here, where contiguous rows hide it (RoPE only sees differences)."""
    generator = torch.Generator().manual_seed(seed)
    rows = [torch.randperm(top, generator=generator)[:length].sort().values for _ in range(batch)]
    return torch.stack(rows).to(test_device())


# -- the decomposed oracle


def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """RMSNorm computed in float32 (float64 stays float64), cast back before the gain."""
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    normed = wide / torch.sqrt(wide.pow(2).mean(dim=-1, keepdim=True) + eps)
    return weight * normed.to(x.dtype)


def rope(x: Tensor, positions: Tensor, theta: float) -> Tensor:
    """Split-half rotation of ``[..., H, T, D]`` (pairs i, i + D/2) by position *
    theta^(-2i/D), positions ``[..., T]``; the angles in float64."""
    D = x.shape[-1]
    inv_freq = theta ** -(torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)
    angles = positions.to(torch.float64)[..., None, :, None] * inv_freq  # [..., 1, T, D/2]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    first, second = x[..., : D // 2], x[..., D // 2 :]
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


def attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Causal attention by index of q ``[B, H, T, D]`` over k, v ``[B, K, T, D]``: query
    head h reads kv head h // (H / K), head by head, with a plain softmax."""
    H, K, T, D = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
    group = H // K
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    heads = []
    for h in range(H):
        scores = q[:, h] @ k[:, h // group].transpose(-1, -2) / math.sqrt(D)
        heads.append(scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v[:, h // group])
    return torch.stack(heads, dim=1)


def swiglu(x: Tensor, state: State, prefix: str) -> Tensor:
    """down(silu(gate(x)) * up(x)) from ``prefix``'s three projections."""
    gate = x @ state[f"{prefix}gate_proj.weight"].T
    up = x @ state[f"{prefix}up_proj.weight"].T
    return (functional.silu(gate) * up) @ state[f"{prefix}down_proj.weight"].T


def top_k(probabilities: Tensor, k: int) -> list[int]:
    """The k most probable experts of one token, the lower index first among equals."""
    values = probabilities.tolist()
    return sorted(range(len(values)), key=lambda e: (-values[e], e))[:k]


def mixture(x: Tensor, state: State, k: int, prefix: str) -> tuple[Tensor, Tensor, Tensor]:
    """The top-k mixture token by token: softmax over every expert, the k most probable,
    their weights renormalised. (output [..., C], router logits [N, E], counts [E])."""
    router = state[f"{prefix}gate.weight"]
    rows = x.reshape(-1, router.shape[1])
    logits = rows @ router.T
    counts = torch.zeros(router.shape[0], dtype=torch.long)
    out = torch.zeros_like(rows)
    for n in range(rows.shape[0]):
        probabilities = logits[n].softmax(dim=-1)
        chosen = top_k(probabilities, k)
        total = sum(probabilities[e] for e in chosen)
        for e in chosen:
            out[n] += probabilities[e] / total * swiglu(rows[n], state, f"{prefix}experts.{e}.")
            counts[e] += 1
    return out.reshape(x.shape), logits, counts


def decoder_layer(
    config: Any,
    state: State,
    index: int,
    x: Tensor,
    positions: Tensor,
    feed_forward: Callable[[Tensor, str], Tensor] | None = None,
) -> Tensor:
    """One pre-norm decoder layer of x ``[B, T, C]`` at positions ``[B, T]`` from the
    checkpoint's tensors; ``feed_forward(normed, "model.layers.<i>.mlp.")`` (default:
    one SwiGLU)."""
    p = f"model.layers.{index}."
    B, T, _ = x.shape
    H, K, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    eps, theta = config.rms_norm_eps, config.rope_theta

    def heads(t: Tensor, n: int) -> Tensor:
        return t.reshape(B, T, n, D).transpose(1, 2)

    normed = rms_norm(x, state[p + "input_layernorm.weight"], eps)
    q = rope(heads(normed @ state[p + "self_attn.q_proj.weight"].T, H), positions, theta)
    k = rope(heads(normed @ state[p + "self_attn.k_proj.weight"].T, K), positions, theta)
    v = heads(normed @ state[p + "self_attn.v_proj.weight"].T, K)
    y = attention(q, k, v).transpose(1, 2).reshape(B, T, H * D)
    h = x + y @ state[p + "self_attn.o_proj.weight"].T
    normed = rms_norm(h, state[p + "post_attention_layernorm.weight"], eps)
    mlp = p + "mlp."
    return h + (swiglu(normed, state, mlp) if feed_forward is None else feed_forward(normed, mlp))
