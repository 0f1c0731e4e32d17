"""A compiled decode path beside the serving path: one static-shape step, compiled once.

``serve_generate`` attends over ``storage[..., :L]`` with L growing every token, so
every step has new shapes and runs op by op. ``CompiledDecoder`` fixes every shape
for the request's whole life, so the step can be compiled once:

- K/V live in a cache preallocated at ``[B, H_kv, capacity, D]`` per layer;
- a step feeds one token per row; its K/V go to ONE slot, written by
  ``index_copy_`` (the slot is a 1-element tensor, not a Python int, so it is data,
  not a shape: no recompile per position);
- attention reads the whole static cache with a mask ``slot <= current slot``
  (stale or zero slots beyond it are masked out);
- the step is compiled by inductor with freezing on (weights become constants the
  code generator can pack and fuse around) and ``dynamic=False``: on CPU mode
  ``max-autotune-no-cudagraphs``, on CUDA ``reduce-overhead`` (CUDA graphs);
- the prompt is prefilled eagerly through the same writer seam, in place.

Rows share their slot (equal-length prompts), not their positions: row b's token in
slot s sits at absolute position ``positions[b, 0] + s``. Greedy tokens equal the
serving path's; logits equal it within fp32 tolerance (other kernels, same math).

The inductor cache lives where ``TORCHINDUCTOR_CACHE_DIR`` says
(``use_inductor_cache`` sets it), so a second process compiles from a warm cache.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import torch
from torch import Tensor

from .attention import folded_grouped_query_attention
from .generation import validate_generation_request
from .output import LayerKV, PastKeyValues
from .serving import InPlaceCacheWriter, ServableModel

_F = TypeVar("_F", bound=Callable[..., Any])


def use_inductor_cache(directory: str | os.PathLike[str]) -> Path:
    """Point inductor's on-disk cache at ``directory`` unless the caller already chose one."""
    chosen = Path(os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(directory))))
    chosen.mkdir(parents=True, exist_ok=True)
    return chosen


def default_mode(device: torch.device) -> str:
    """CUDA graphs on a GPU; on CPU, autotuned kernels without graphs."""
    return "reduce-overhead" if device.type == "cuda" else "max-autotune-no-cudagraphs"


class StaticCacheWriter:
    """Writes T tokens' K/V into ``slots_T`` of every row; attends over the whole cache."""

    def __init__(self, cache: PastKeyValues, slots_T: Tensor) -> None:
        self._cache = cache
        self._slots_T = slots_T

    @property
    def storage_length(self) -> int:
        return self._cache[0][0].shape[2]

    def write(self, layer_index: int, key_new: Tensor, value_new: Tensor) -> LayerKV:
        key_cache, value_cache = self._cache[layer_index]
        key_cache.index_copy_(2, self._slots_T, key_new)
        value_cache.index_copy_(2, self._slots_T, value_new)
        return key_cache, value_cache


class StaticKV:
    """A model over its own K/V, preallocated at ``[B, H_kv, capacity, D]`` per layer.

    Every method keeps its shapes fixed for the cache's life (the first slot is a
    1-element tensor: data, not a shape), so each compiles to one graph per width T.
    Slot s of row b holds the token at absolute position ``origin_b + s``; a query in
    slot q sees slots ``<= q``, so stale slots beyond the live prefix (after a
    rollback, which is only a smaller next slot) are masked out, then overwritten.
    """

    def __init__(self, model: ServableModel, batch_size: int, capacity: int) -> None:
        geometry = model.geometry
        for name, value in (("batch_size", batch_size), ("capacity", capacity)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if capacity > geometry.context_length:
            raise ValueError(
                f"capacity {capacity} exceeds the model's context length {geometry.context_length}"
            )
        model.train(False)
        self.model = model
        self.geometry = geometry
        shape = (batch_size, geometry.n_kv_heads, capacity, geometry.head_dim)
        self.cache: PastKeyValues = tuple(
            (
                torch.zeros(shape, dtype=geometry.dtype, device=geometry.device),
                torch.zeros(shape, dtype=geometry.dtype, device=geometry.device),
            )
            for _ in range(geometry.n_layers)
        )
        self.slot_S = torch.arange(capacity, device=geometry.device)

    @property
    def batch_size(self) -> int:
        return self.cache[0][0].shape[0]

    @property
    def capacity(self) -> int:
        return self.cache[0][0].shape[2]

    def forward(self, tokens_BT: Tensor, positions_BT: Tensor, slot_1: Tensor) -> Tensor:
        """Feed T tokens per row into slots ``slot_1 .. slot_1 + T - 1``: logits ``[B, T, V]``."""
        B, T = tokens_BT.shape
        slots_T = slot_1 + torch.arange(T, device=slot_1.device)
        mask = (self.slot_S <= slots_T[:, None]).expand(B, 1, T, self.slot_S.shape[0])
        writer = StaticCacheWriter(self.cache, slots_T)
        hidden, _ = self.model.run_blocks(
            tokens_BT, positions_BT, mask, writer, folded_grouped_query_attention
        )
        logits: Tensor = self.model.lm_head(hidden)
        return logits

    def last_logits(self, token_B1: Tensor, position_B1: Tensor, slot_1: Tensor) -> Tensor:
        """One token per row: logits ``[B, V]`` (the plain decode step)."""
        return self.forward(token_B1, position_B1, slot_1)[:, -1]

    def greedy_chain(
        self, token_B1: Tensor, position_B1: Tensor, slot_1: Tensor, steps: int
    ) -> Tensor:
        """``steps`` greedy tokens ``[B, steps]``, each fed back: one graph, no host sync.

        Feeds ``token_B1`` then the first ``steps - 1`` choices (their K/V land in
        slots ``slot_1 ..``); the last choice is returned, not fed.
        """
        chosen = []
        for step in range(steps):  # unrolled when traced: steps is a constant
            logits_BV = self.last_logits(token_B1, position_B1 + step, slot_1 + step)
            token_B1 = logits_BV.argmax(dim=-1, keepdim=True)
            chosen.append(token_B1)
        return torch.cat(chosen, dim=1)

    def prefill(self, input_ids: Tensor, positions: Tensor) -> Tensor:
        """Eager, in place into slots ``0..T-1``: the last prompt token's logits ``[B, V]``."""
        T = input_ids.shape[1]
        slots_BT = (positions - positions[:, :1]).contiguous()
        mask = (self.slot_S[:T] <= slots_BT[:, :, None])[:, None]
        writer = InPlaceCacheWriter(self.cache, slots_BT, T)
        hidden, _ = self.model.run_blocks(
            input_ids, positions, mask, writer, folded_grouped_query_attention
        )
        logits: Tensor = self.model.lm_head(hidden[:, -1])
        return logits


class CompiledDecoder:
    """Greedy decoding of ``[B, T]`` prompts with a compiled static-shape step.

    ``capacity`` bounds prompt + new tokens. ``compile=False`` runs the same static
    step eagerly (the compiled path's own reference). The first ``generate`` (or
    ``warm_up``) compiles; ``compile_seconds`` records how long it took.
    """

    def __init__(
        self,
        model: ServableModel,
        batch_size: int,
        capacity: int,
        *,
        compile: bool = True,
        mode: str | None = None,
    ) -> None:
        self.static = StaticKV(model, batch_size, capacity)
        self.model = model
        self.geometry = model.geometry
        self.cache = self.static.cache
        self.mode = mode or default_mode(self.geometry.device)
        self.compile_seconds: float | None = None
        self._step: Callable[[Tensor, Tensor, Tensor], Tensor] = self.static.last_logits
        if compile:
            self._step = compile_static(self.static.last_logits, self.mode)

    @property
    def batch_size(self) -> int:
        return self.static.batch_size

    @property
    def capacity(self) -> int:
        return self.static.capacity

    def prefill(self, input_ids: Tensor, positions: Tensor) -> Tensor:
        """Eager, in place into slots ``0..T-1``: the last prompt token's logits ``[B, V]``."""
        return self.static.prefill(input_ids, positions)

    def step(self, token_B1: Tensor, position_B1: Tensor, slot: int) -> Tensor:
        """Feed one token per row at ``slot`` (compiled); logits ``[B, V]``."""
        slot_1 = torch.tensor([slot], device=token_B1.device)
        return self._step(token_B1, position_B1, slot_1)

    def warm_up(self) -> float:
        """Compile (or load from the inductor cache) now; returns and records the seconds."""
        if self.compile_seconds is None:
            B, device = self.batch_size, self.static.slot_S.device
            started = time.perf_counter()
            # Inputs made under inference_mode, as generate's are: the guards then match.
            with torch.inference_mode():
                token_B1 = torch.zeros(B, 1, dtype=torch.long, device=device)
                self.step(token_B1, token_B1.clone(), 0)
                self.step(token_B1, token_B1 + 1, 1)  # reduce-overhead records on the 2nd call
            self.compile_seconds = time.perf_counter() - started
        return self.compile_seconds

    def generate(
        self,
        input_ids: Tensor,
        positions: Tensor,
        max_new_tokens: int,
        eos_token_id: int | None = None,
    ) -> Tensor:
        """Prompt plus greedy tokens ``[B, T + n]``: ``model.generate``'s tokens and EOS rule.

        ``positions`` must be consecutive per row (row b from its own origin).
        ValueError before anything runs for what ``generate`` rejects, a batch other
        than ``batch_size``, gapped positions, or T + n beyond the capacity.
        """
        self._check(input_ids, positions, max_new_tokens, eos_token_id)
        if max_new_tokens == 0:
            return input_ids.clone()
        self.warm_up()
        B, T = input_ids.shape
        with torch.inference_mode():
            out = input_ids.new_empty(B, T + max_new_tokens)
            out[:, :T] = input_ids
            finished_B = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
            logits_BV = self.prefill(input_ids, positions)
            position_B1 = positions[:, -1:].clone()
            emitted = 0
            while True:
                next_B1 = logits_BV.argmax(dim=-1, keepdim=True)
                if eos_token_id is not None:
                    next_B1 = next_B1.masked_fill(finished_B[:, None], eos_token_id)
                    finished_B = finished_B | (next_B1[:, 0] == eos_token_id)
                out[:, T + emitted] = next_B1[:, 0]
                emitted += 1
                if emitted == max_new_tokens or (
                    eos_token_id is not None and bool(finished_B.all())
                ):
                    break
                position_B1 = position_B1 + 1
                logits_BV = self.step(next_B1, position_B1, T + emitted - 1)
        return out[:, : T + emitted].clone()

    def _check(
        self, input_ids: Tensor, positions: Tensor, max_new_tokens: int, eos_token_id: int | None
    ) -> None:
        validate_generation_request(
            input_ids, positions, max_new_tokens, eos_token_id, self.geometry
        )
        if input_ids.shape[0] != self.batch_size:
            raise ValueError(
                f"input_ids has batch {input_ids.shape[0]}, the decoder was built for "
                f"batch_size {self.batch_size}"
            )
        T = input_ids.shape[1]
        offsets = torch.arange(T, device=positions.device)
        if not torch.equal(positions, positions[:, :1] + offsets):
            raise ValueError("positions must be consecutive in every row")
        if T + max_new_tokens > self.capacity:
            raise ValueError(
                f"prompt {T} + max_new_tokens {max_new_tokens} exceeds the capacity {self.capacity}"
            )


def compile_static(function: _F, mode: str) -> _F:
    """inductor with freezing (weights as constants), one static graph per input shape."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    inductor_config.freezing = True
    # One graph per decoder (its cache and weights are guarded): room for many decoders,
    # instead of a silent fall-back to eager after the default 8.
    dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, 64)
    return cast(_F, torch.compile(function, mode=mode, dynamic=False, fullgraph=True))


__all__ = [
    "CompiledDecoder",
    "StaticCacheWriter",
    "StaticKV",
    "compile_static",
    "default_mode",
    "use_inductor_cache",
]
