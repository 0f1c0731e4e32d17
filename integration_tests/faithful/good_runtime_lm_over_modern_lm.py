"""Faithful M04 written from packages/runtime_lm/README.md's Contract alone, over modern_lm.

Its shape is unlike the reference's: the config subclasses `modern_lm.ModernLMConfig`
with no check of its own (the kit's M02 rules only); the context lives on a class
(`Context.offsets`) and becomes an additive float mask built with `repeat_interleave`
of request ids; attention is a manual softmax over `modern_lm.repeat_kv`'d heads; the
packed projections are bare `nn.Parameter`s on a module of its own (`Packed`), used with
`F.linear`; another stage's layers are `Elsewhere` modules; `IntermediateTensors` is a
dataclass; `load_weights` takes Llama's names only (no packed names), gathers the
iterable into a list, then checks names, duplicates, shapes and missing weights in that
order before one copy pass.
"""

from __future__ import annotations

VARIABLE = "RUNTIME_LM_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from modern_lm import ModernLMConfig, RMSNorm, RotaryEmbedding, apply_rotary, repeat_kv


@dataclass(frozen=True)
class RuntimeLMConfig(ModernLMConfig):
    pipeline_rank: int = 0
    pipeline_size: int = 1


@dataclass
class IntermediateTensors:
    tensors: dict = field(default_factory=dict)

    def __getitem__(self, key):
        return self.tensors[key]


class Context:
    offsets: torch.Tensor | None = None

    @classmethod
    def mask(cls, rows, device):
        if cls.offsets is None:
            request = torch.zeros(rows, dtype=torch.long, device=device)
        else:
            counts = (cls.offsets[1:] - cls.offsets[:-1]).to(device)
            request = torch.repeat_interleave(torch.arange(len(counts), device=device), counts)
        index = torch.arange(rows, device=device)
        allowed = (request[:, None] == request[None, :]) & (index[:, None] >= index[None, :])
        return torch.zeros(rows, rows, device=device).masked_fill(~allowed, float("-inf"))


def set_attention_context(query_start_loc):
    Context.offsets = None if query_start_loc is None else query_start_loc.detach().clone()


class Packed(nn.Module):
    def __init__(self, rows, columns):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, columns))

    def forward(self, x):
        return F.linear(x, self.weight)


class Elsewhere(nn.Module):
    """Another stage's layer: no weights."""


class Attention(nn.Module):
    def __init__(self, c, prefix):
        super().__init__()
        self.prefix = prefix
        self.c = c
        H, K, D = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.qkv_proj = Packed((H + 2 * K) * D, c.hidden_size)
        self.o_proj = Packed(c.hidden_size, H * D)
        self.rope = RotaryEmbedding(D, c.rope_theta)

    def forward(self, x, positions):
        c, N = self.c, x.shape[0]
        H, K, D = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        qkv = self.qkv_proj(x)
        q = qkv[:, : H * D].reshape(1, N, H, D).permute(0, 2, 1, 3)
        k = qkv[:, H * D : (H + K) * D].reshape(1, N, K, D).permute(0, 2, 1, 3)
        v = qkv[:, (H + K) * D :].reshape(1, N, K, D).permute(0, 2, 1, 3)
        cos, sin = self.rope(positions[None], x.dtype)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        k, v = repeat_kv(k, H // K), repeat_kv(v, H // K)
        scores = q @ k.transpose(-1, -2) / D**0.5 + Context.mask(N, x.device)
        y = scores.softmax(dim=-1) @ v
        return self.o_proj(y[0].permute(1, 0, 2).reshape(N, H * D))


class MLP(nn.Module):
    def __init__(self, c, prefix):
        super().__init__()
        self.prefix = prefix
        self.gate_up_proj = Packed(2 * c.intermediate_size, c.hidden_size)
        self.down_proj = Packed(c.hidden_size, c.intermediate_size)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, c, prefix):
        super().__init__()
        self.prefix = prefix
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c, prefix + ".self_attn")
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c, prefix + ".mlp")

    def forward(self, x, positions):
        x = x + self.self_attn(self.input_layernorm(x), positions)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self, c, prefix):
        super().__init__()
        self.prefix = prefix
        L, P, r = c.num_hidden_layers, c.pipeline_size, c.pipeline_rank
        self.is_first, self.is_last = r == 0, r == P - 1
        self.mine = range(r * L // P, (r + 1) * L // P)
        if self.is_first or (self.is_last and c.tie_word_embeddings):
            self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(
            Block(c, f"{prefix}.layers.{i}") if i in self.mine else Elsewhere() for i in range(L)
        )
        if self.is_last:
            self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class RuntimeCausalLM(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.config = config
        self.model = Model(config, prefix + ".model" if prefix else "model")
        if self.model.is_last:
            self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        for parameter in self.parameters():
            if parameter.dim() == 1:
                nn.init.ones_(parameter)
            else:
                nn.init.normal_(parameter, std=0.02)
        if self.model.is_last and config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def embed_input_ids(self, input_ids):
        return self.model.embed_tokens(input_ids)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        if self.model.is_first:
            if input_ids is not None and inputs_embeds is not None:
                raise ValueError("input_ids and inputs_embeds are both given")
            if input_ids is None and inputs_embeds is None:
                raise ValueError("neither input_ids nor inputs_embeds is given")
            x = self.embed_input_ids(input_ids) if inputs_embeds is None else inputs_embeds
        else:
            x = intermediate_tensors["hidden_states"]
        for i in self.model.mine:
            x = self.model.layers[i](x, positions)
        if not self.model.is_last:
            return IntermediateTensors({"hidden_states": x})
        return self.model.norm(x)

    def compute_logits(self, hidden_states):
        return hidden_states @ self.lm_head.weight.T

    def _checkpoint(self):
        """Llama's checkpoint names of the whole model -> (this stage's parameter, rows) or
        None (held elsewhere), with each name's shape."""
        c = self.config
        H, K, D, Fi, C = (
            c.num_attention_heads,
            c.num_key_value_heads,
            c.head_dim,
            c.intermediate_size,
            c.hidden_size,
        )
        own = dict(self.named_parameters())
        table = {}

        def add(name, shape, target, start=None):
            stop = None if start is None else start + shape[0]
            table[name] = (shape, (target, start, stop) if target in own else None)

        add("model.embed_tokens.weight", (c.vocab_size, C), "model.embed_tokens.weight")
        for i in range(c.num_hidden_layers):
            a, m = f"model.layers.{i}.self_attn.", f"model.layers.{i}.mlp."
            add(
                f"model.layers.{i}.input_layernorm.weight",
                (C,),
                f"model.layers.{i}.input_layernorm.weight",
            )
            add(a + "q_proj.weight", (H * D, C), a + "qkv_proj.weight", 0)
            add(a + "k_proj.weight", (K * D, C), a + "qkv_proj.weight", H * D)
            add(a + "v_proj.weight", (K * D, C), a + "qkv_proj.weight", (H + K) * D)
            add(a + "o_proj.weight", (C, H * D), a + "o_proj.weight")
            add(
                f"model.layers.{i}.post_attention_layernorm.weight",
                (C,),
                f"model.layers.{i}.post_attention_layernorm.weight",
            )
            add(m + "gate_proj.weight", (Fi, C), m + "gate_up_proj.weight", 0)
            add(m + "up_proj.weight", (Fi, C), m + "gate_up_proj.weight", Fi)
            add(m + "down_proj.weight", (C, Fi), m + "down_proj.weight")
        add("model.norm.weight", (C,), "model.norm.weight")
        add("lm_head.weight", (c.vocab_size, C), "lm_head.weight")
        return table

    def load_weights(self, weights):
        items = list(weights)
        table = self._checkpoint()
        names = [name for name, _ in items]
        for name in names:
            if name not in table:
                raise ValueError(f"unexpected weight {name}")
        for name in set(names):
            if names.count(name) > 1:
                raise ValueError(f"duplicate weight {name}")
        for name, tensor in items:
            if tuple(tensor.shape) != table[name][0]:
                raise ValueError(f"misshaped weight {name}: {tuple(tensor.shape)}")
        needed = {name for name, (_, route) in table.items() if route is not None}
        if needed - set(names):
            raise ValueError(f"missing weights {sorted(needed - set(names))}")
        own = dict(self.named_parameters())
        with torch.no_grad():
            for name, tensor in items:
                route = table[name][1]
                if route is None:
                    continue
                target, start, stop = route
                destination = own[target] if start is None else own[target][start:stop]
                destination.copy_(tensor)
        return {table[name][1][0] for name in needed}
