"""TinyGPT: embeddings, a ModuleList of pre-norm blocks, a final norm and a tied LM head."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import PastKeyValues
from .blocks import Block
from .config import GPTConfig
from .errors import ArgumentTypeError, type_name
from .generation import generate
from .validation import (
    IGNORE_INDEX,
    check_context_length,
    check_flag,
    validate_input_ids,
    validate_labels,
    validate_past_key_values,
)


@dataclass(frozen=True)
class CausalLMOutput:
    logits: Tensor  # [B, T, V]
    loss: Tensor | None = None
    past_key_values: PastKeyValues | None = None


class TinyGPT(nn.Module):
    """GPT-2-shaped decoder. Positions start at 0, or at the cache length with a cache."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        check_config(config)
        self.config = config
        C = config.d_model
        self.token_embedding = nn.Embedding(config.vocab_size, C)
        self.position_embedding = nn.Embedding(config.context_length, C)
        self.embedding_dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(C, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(C, config.vocab_size, bias=False)
        # Tied: one Parameter under two names. load_state_dict copies into it in place,
        # so the identity survives a strict load.
        self.lm_head.weight = self.token_embedding.weight
        self.apply(self._init_weights)
        for name, parameter in self.named_parameters():
            if name.endswith(("out_proj.weight", "down_proj.weight")):
                # GPT-2: residual writes shrink with depth so the stream's variance stays flat.
                nn.init.normal_(parameter, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def forward(
        self,
        input_ids: Tensor,
        labels: Tensor | None = None,
        past_key_values: PastKeyValues | None = None,
        use_cache: bool = False,
    ) -> CausalLMOutput:
        device = self.token_embedding.weight.device
        B, T = validate_input_ids(input_ids, self.config, device)
        past_length = 0
        if past_key_values is not None:
            past_length = validate_past_key_values(
                past_key_values, self.config, B, self.token_embedding.weight.dtype, device
            )
        check_context_length(past_length + T, self.config, "past + new tokens")
        if labels is not None:
            validate_labels(labels, input_ids, self.config)
        check_flag("use_cache", use_cache)

        logits, present = self.logits_and_cache(input_ids, past_key_values)
        loss = None if labels is None else shifted_cross_entropy(logits, labels)
        return CausalLMOutput(logits, loss, present if use_cache else None)

    def logits_and_cache(
        self, input_ids: Tensor, past_key_values: PastKeyValues | None = None
    ) -> tuple[Tensor, PastKeyValues]:
        """The forward pass proper, on inputs already validated: logits [B, T, V], new cache."""
        past_length = 0 if past_key_values is None else past_key_values[0][0].size(2)
        x = self.embed(input_ids, past_length)  # [B, T, C]
        present = []
        for index, block in enumerate(self.blocks):
            layer_past = None if past_key_values is None else past_key_values[index]
            x, key_value = block(x, layer_past)
            present.append(key_value)
        logits: Tensor = self.lm_head(self.final_norm(x))  # [B, T, V]
        return logits, tuple(present)

    def embed(self, input_ids: Tensor, past_length: int) -> Tensor:
        """Token plus learned position embeddings, positions past_length .. past_length+T-1."""
        T = input_ids.size(1)
        positions = torch.arange(past_length, past_length + T, device=input_ids.device)
        x: Tensor = self.token_embedding(input_ids) + self.position_embedding(positions)
        embedded: Tensor = self.embedding_dropout(x)
        return embedded

    def generate(
        self,
        input_ids: Tensor,
        max_new_tokens: int,
        temperature: float = 0.0,
        eos_token_id: int | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Prompt plus continuation [B, T + n]; see tinygpt.generation."""
        return generate(self, input_ids, max_new_tokens, temperature, eos_token_id, generator)


def check_config(config: object) -> None:
    """A GPTConfig (or a candidate's look-alike with the same fields): not a dict or None."""
    missing = [name for name in _CONFIG_FIELDS if not hasattr(config, name)]
    if missing:
        raise ArgumentTypeError(
            f"config must be a GPTConfig, got {type_name(config)} without {missing}"
        )


_CONFIG_FIELDS = (
    "vocab_size",
    "context_length",
    "d_model",
    "n_layers",
    "n_heads",
    "d_ff",
    "dropout",
    "layer_norm_eps",
    "gelu_approximate",
)


def shifted_cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy of logits[:, :-1] against labels[:, 1:], skipping -100.

    Sum over scored tokens divided by their count (at least 1): nothing scored gives a
    zero that is still attached to the graph, where the plain mean would give NaN.
    """
    V = logits.size(-1)
    shift_logits = logits[:, :-1].reshape(-1, V)
    shift_labels = labels[:, 1:].reshape(-1)
    total = F.cross_entropy(shift_logits, shift_labels, ignore_index=IGNORE_INDEX, reduction="sum")
    scored = (shift_labels != IGNORE_INDEX).sum().clamp(min=1)
    return total / scored


__all__ = ["CausalLMOutput", "TinyGPT"]
