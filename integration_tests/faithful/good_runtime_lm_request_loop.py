"""Faithful M04 written from packages/runtime_lm/README.md's Contract alone, self-contained.

Its shape is unlike the reference's: no `modern_lm` import (its own RMSNorm on the fused
add-and-norm of vLLM's Llama, cos/sin tables indexed by position, GQA by `enable_gqa`);
attention runs one request at a time (a Python loop over the context's offsets, each
request's rows through `is_causal` SDPA, the outputs written back into place); between
stages it carries vLLM's two tensors, `hidden_states` (the last MLP's output) and
`residual` (the stream before it); a stage's layers live in an `nn.ModuleDict` keyed by
their global index (no placeholder modules); the config is a dataclass of its own with
the kit's checks only; `load_weights` also takes already-packed names and raises KeyError
for a name it does not know; `IntermediateTensors` is a plain class.
"""

from __future__ import annotations

VARIABLE = "RUNTIME_LM_MODULE"  # graded through this variable by `nox -s known_bad`

import itertools
import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

_CONTEXT: list[torch.Tensor | None] = [None]


def set_attention_context(query_start_loc):
    _CONTEXT[0] = None if query_start_loc is None else query_start_loc.clone()


@dataclass(frozen=True)
class RuntimeLMConfig:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    dropout: float = 0.0
    tie_word_embeddings: bool = False
    pipeline_rank: int = 0
    pipeline_size: int = 1

    def __post_init__(self):
        if self.hidden_size != self.num_attention_heads * self.head_dim:
            raise ValueError("hidden_size must be num_attention_heads * head_dim")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_key_value_heads must divide num_attention_heads")
        if self.head_dim % 2:
            raise ValueError("head_dim must be even")


class IntermediateTensors:
    def __init__(self, tensors):
        self.tensors = dict(tensors)

    def __getitem__(self, key):
        return self.tensors[key]


class Norm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x, residual=None):
        """vLLM's fused form: with a residual, add first and return (normed, the sum)."""
        if residual is not None:
            x = x + residual
            residual = x
        x32 = x.float()
        normed = (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)
        return self.weight * normed if residual is None else (self.weight * normed, residual)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + turned * sin


class Attention(nn.Module):
    def __init__(self, config, prefix):
        super().__init__()
        self.prefix = prefix
        self.h, self.kv, self.d = (
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        )
        self.qkv_proj = nn.Linear(config.hidden_size, (self.h + 2 * self.kv) * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, config.hidden_size, bias=False)
        half = torch.arange(0, self.d, 2, dtype=torch.float32) / self.d
        angles = torch.arange(config.max_position_embeddings, dtype=torch.float32)[:, None] * (
            config.rope_theta**-half
        )
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos_table", angles.cos(), persistent=False)
        self.register_buffer("sin_table", angles.sin(), persistent=False)

    def forward(self, positions, x):
        N = x.shape[0]
        q, k, v = self.qkv_proj(x).split([self.h * self.d, self.kv * self.d, self.kv * self.d], -1)
        cos, sin = self.cos_table[positions][:, None], self.sin_table[positions][:, None]
        q = rotate(q.view(N, self.h, self.d), cos, sin).transpose(0, 1)
        k = rotate(k.view(N, self.kv, self.d), cos, sin).transpose(0, 1)
        v = v.view(N, self.kv, self.d).transpose(0, 1)
        offsets = _CONTEXT[0]
        bounds = [0, N] if offsets is None else offsets.tolist()
        out = torch.zeros_like(q)
        for start, stop in itertools.pairwise(bounds):  # one request at a time
            if stop > start:
                out[:, start:stop] = F.scaled_dot_product_attention(
                    q[None, :, start:stop],
                    k[None, :, start:stop],
                    v[None, :, start:stop],
                    is_causal=True,
                    scale=1 / math.sqrt(self.d),
                    enable_gqa=True,
                )[0]
        return self.o_proj(out.transpose(0, 1).reshape(N, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, config, prefix):
        super().__init__()
        self.prefix = prefix
        self.size = config.intermediate_size
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * self.size, bias=False)
        self.down_proj = nn.Linear(self.size, config.hidden_size, bias=False)

    def forward(self, x):
        fused = self.gate_up_proj(x)
        return self.down_proj(F.silu(fused[:, : self.size]) * fused[:, self.size :])


class Layer(nn.Module):
    def __init__(self, config, prefix):
        super().__init__()
        self.prefix = prefix
        self.input_layernorm = Norm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config, prefix + ".self_attn")
        self.post_attention_layernorm = Norm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config, prefix + ".mlp")

    def forward(self, positions, hidden, residual):
        if residual is None:
            residual, hidden = hidden, self.input_layernorm(hidden)
        else:
            hidden, residual = self.input_layernorm(hidden, residual)
        hidden = self.self_attn(positions, hidden)
        hidden, residual = self.post_attention_layernorm(hidden, residual)
        return self.mlp(hidden), residual


class Trunk(nn.Module):
    def __init__(self, config, prefix):
        super().__init__()
        self.prefix = prefix
        L, P, r = config.num_hidden_layers, config.pipeline_size, config.pipeline_rank
        self.first, self.last = r == 0, r == P - 1
        self.held = list(range(r * L // P, (r + 1) * L // P))
        if self.first or (self.last and config.tie_word_embeddings):
            self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleDict(
            {str(i): Layer(config, f"{prefix}.layers.{i}") for i in self.held}
        )
        if self.last:
            self.norm = Norm(config.hidden_size, config.rms_norm_eps)

    def forward(self, input_ids, positions, intermediate_tensors, inputs_embeds):
        if self.first:
            if (input_ids is None) == (inputs_embeds is None):
                raise ValueError("give exactly one of input_ids and inputs_embeds")
            hidden = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
            residual = None
        else:
            hidden = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        for i in self.held:
            hidden, residual = self.layers[str(i)](positions, hidden, residual)
        if not self.last:
            return IntermediateTensors({"hidden_states": hidden, "residual": residual})
        return self.norm(hidden, residual)[0]


class RuntimeCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = Trunk(config, f"{prefix}.model" if prefix else "model")
        if self.model.last:
            self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
            if config.tie_word_embeddings:
                self.lm_head.weight = self.model.embed_tokens.weight
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)

    def embed_input_ids(self, input_ids):
        return self.model.embed_tokens(input_ids)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)

    def compute_logits(self, hidden_states):
        return self.lm_head(hidden_states)

    def load_weights(self, weights):
        routes = self._routes()
        given = {}
        for name, tensor in weights:
            if name not in routes:
                raise KeyError(f"unexpected weight {name}")
            if name in given:
                raise ValueError(f"{name} appears twice")
            given[name] = tensor
        params = dict(self.named_parameters())
        plan = []
        for name, route in routes.items():
            if route is None or (name not in given and route[2]):
                continue  # held elsewhere, or a packed name (its shards stand for it)
            target, rows, _, packed = route
            if name not in given and packed not in given:
                raise ValueError(f"missing weight {name}")
            if name not in given:
                continue
            want = params[target][rows].shape
            if given[name].shape != want:
                raise ValueError(f"{name}: shape {tuple(given[name].shape)}, want {tuple(want)}")
            plan.append((target, rows, given[name]))
        with torch.no_grad():
            for target, rows, tensor in plan:
                params[target][rows].copy_(tensor)
        return {target for target, _, _ in plan}

    def _routes(self):
        """Every name of the whole checkpoint: (parameter, rows, is a packed name, its
        packed name) for this stage, None for a weight another stage holds."""
        c = self.config
        q, kv, f = (
            c.num_attention_heads * c.head_dim,
            c.num_key_value_heads * c.head_dim,
            c.intermediate_size,
        )
        shards = {
            "self_attn.q_proj": ("self_attn.qkv_proj", 0, q),
            "self_attn.k_proj": ("self_attn.qkv_proj", q, q + kv),
            "self_attn.v_proj": ("self_attn.qkv_proj", q + kv, q + 2 * kv),
            "mlp.gate_proj": ("mlp.gate_up_proj", 0, f),
            "mlp.up_proj": ("mlp.gate_up_proj", f, 2 * f),
        }
        whole = ["input_layernorm", "post_attention_layernorm", "self_attn.o_proj", "mlp.down_proj"]
        routes = {}
        for i in range(c.num_hidden_layers):
            p, mine = f"model.layers.{i}.", i in self.model.held
            for short, (packed, start, stop) in shards.items():
                target = p + packed + ".weight"
                routes[p + short + ".weight"] = (
                    (target, slice(start, stop), False, target) if mine else None
                )
            for short in ["self_attn.qkv_proj", "mlp.gate_up_proj", *whole]:
                target = p + short + ".weight"
                routes[target] = (
                    (
                        target,
                        slice(None),
                        short in ("self_attn.qkv_proj", "mlp.gate_up_proj"),
                        target,
                    )
                    if mine
                    else None
                )
        held = dict(self.named_parameters())
        for name in ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"):
            routes[name] = (name, slice(None), False, name) if name in held else None
        return routes
