"""RuntimeCausalLM: a vLLM-shaped causal LM over flat token rows.

RuntimeCausalLM (checkpoint names with packed projections; a stage holds only its part)
  model.embed_tokens                          [V, C]   first stage (and a tied last one)
  model.layers.N.input_layernorm              [C]
  model.layers.N.self_attn.qkv_proj           [(H + 2*H_kv)*D, C]   q rows, k rows, v rows
  model.layers.N.self_attn.o_proj             [C, H*D]
  model.layers.N.post_attention_layernorm     [C]
  model.layers.N.mlp.gate_up_proj             [2F, C]  gate rows, then up rows
  model.layers.N.mlp.down_proj                [C, F]
  model.norm                                  [C]      last stage
  lm_head                                     [V, C]   last stage (the embedding when tied)

``forward`` maps flat rows to hidden states (or, before the last stage, to
``IntermediateTensors``); ``compute_logits`` applies the head apart from it, so a
runner can take logits of the rows it samples only.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn

from modern_lm import ArgumentTypeError, RMSNorm

from .config import RuntimeLMConfig
from .intermediate import IntermediateTensors
from .layers import MissingLayer, RuntimeDecoderLayer, join
from .loading import load_weights

INITIALIZER_RANGE = 0.02  # std of every projection and the embedding (M02's, Llama's)


class RuntimeModel(nn.Module):
    """Embedding, this stage's layers and the final norm: rows -> hidden states."""

    def __init__(self, config: RuntimeLMConfig, prefix: str) -> None:
        super().__init__()
        self.config, self.prefix = config, prefix
        C = config.hidden_size
        self.embed_tokens: nn.Module = (
            nn.Embedding(config.vocab_size, C) if config.holds_embedding else MissingLayer()
        )
        self.layers = nn.ModuleList(
            RuntimeDecoderLayer(config, join(prefix, f"layers.{i}"))
            if i in config.stage_layers
            else MissingLayer()
            for i in range(config.num_hidden_layers)
        )
        self.norm: nn.Module = (
            RMSNorm(C, config.rms_norm_eps) if config.last_stage else MissingLayer()
        )

    def embed_input_ids(self, input_ids: Tensor) -> Tensor:
        out: Tensor = self.embed_tokens(_checked_ids(input_ids, self.config.vocab_size))
        return out

    def forward(
        self,
        input_ids: Tensor | None,
        positions: Tensor,
        intermediate_tensors: IntermediateTensors | None,
        inputs_embeds: Tensor | None,
    ) -> Tensor | IntermediateTensors:
        if self.config.first_stage:
            x = self._first_input(input_ids, inputs_embeds)
        elif intermediate_tensors is None:
            raise ValueError("a later pipeline stage needs intermediate_tensors")
        else:
            x = intermediate_tensors["hidden_states"]  # ids and embeds are the first stage's
        positions = _checked_positions(positions, x.shape[0], self.config)
        for i in self.config.stage_layers:
            x = self.layers[i](positions, x)
        if not self.config.last_stage:
            return IntermediateTensors({"hidden_states": x})
        out: Tensor = self.norm(x)
        return out

    def _first_input(self, input_ids: Tensor | None, inputs_embeds: Tensor | None) -> Tensor:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("the first stage takes exactly one of input_ids and inputs_embeds")
        if inputs_embeds is None:
            return self.embed_input_ids(input_ids)  # type: ignore[arg-type]
        return inputs_embeds


class RuntimeCausalLM(nn.Module):
    """``RuntimeCausalLM(config, prefix="")``: vLLM's model interface on flat rows."""

    def __init__(self, config: RuntimeLMConfig, prefix: str = "") -> None:
        super().__init__()
        self.config, self.prefix = config, prefix
        self.model = RuntimeModel(config, join(prefix, "model"))
        self.lm_head: nn.Module = (
            nn.Linear(config.hidden_size, config.vocab_size, bias=False)
            if config.last_stage
            else MissingLayer()
        )
        self.apply(_init_weights)
        if config.last_stage and config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight  # one Parameter

    def embed_input_ids(self, input_ids: Tensor) -> Tensor:
        """[N] token ids -> [N, C] embeddings (what ``inputs_embeds`` stands for)."""
        return self.model.embed_input_ids(input_ids)

    def forward(
        self,
        input_ids: Tensor | None,
        positions: Tensor,
        intermediate_tensors: IntermediateTensors | None = None,
        inputs_embeds: Tensor | None = None,
    ) -> Tensor | IntermediateTensors:
        """Flat rows under the attention context -> final hidden states [N, C] (last
        stage) or ``IntermediateTensors`` (any other stage). No logits here."""
        out: Tensor | IntermediateTensors = self.model(
            input_ids, positions, intermediate_tensors, inputs_embeds
        )
        return out

    def compute_logits(self, hidden_states: Tensor) -> Tensor:
        """[N, C] final hidden states -> [N, V] logits (the last stage's head)."""
        logits: Tensor = self.lm_head(hidden_states)
        return logits

    def load_weights(self, weights: Iterable[tuple[str, Tensor]]) -> set[str]:
        """Checkpoint-named tensors (separate q/k/v and gate/up) into this stage's
        parameters; the names of the parameters loaded. All or nothing."""
        return load_weights(self, weights)


def _checked_ids(input_ids: object, vocab: int) -> Tensor:
    if not isinstance(input_ids, Tensor):
        raise ArgumentTypeError(f"input_ids must be a Tensor, got {type(input_ids).__name__}")
    if input_ids.dtype != torch.long or input_ids.dim() != 1:
        raise ValueError(
            f"input_ids must be long [N], got {input_ids.dtype} {tuple(input_ids.shape)}"
        )
    if bool(((input_ids < 0) | (input_ids >= vocab)).any()):
        raise ValueError(f"input_ids must lie in [0, {vocab})")
    return input_ids


def _checked_positions(positions: object, rows: int, config: RuntimeLMConfig) -> Tensor:
    if not isinstance(positions, Tensor):
        raise ArgumentTypeError(f"positions must be a Tensor, got {type(positions).__name__}")
    if positions.dtype != torch.long or tuple(positions.shape) != (rows,):
        raise ValueError(
            f"positions must be long [{rows}], got {positions.dtype} {tuple(positions.shape)}"
        )
    context = config.max_position_embeddings
    if bool(((positions < 0) | (positions >= context)).any()):
        raise ValueError(f"positions must lie in [0, max_position_embeddings={context})")
    return positions


def _init_weights(module: nn.Module) -> None:
    """M02's initialisation: N(0, 0.02) projections and embedding, unit norm gains."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=INITIALIZER_RANGE)
    elif isinstance(module, RMSNorm):
        nn.init.ones_(module.weight)


__all__ = ["RuntimeCausalLM", "RuntimeModel"]
