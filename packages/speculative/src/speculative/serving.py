"""Greedy speculative decoding on the serving cache: K/V in place, rollback by length.

``speculative_generate`` (generate.py) is the reference: functional caches, rollback
by slicing. Here target and draft each write K/V in place into request-owned
fixed-capacity storage (``cache_aware_lm.RequestStorage``; ``kv_cache.KVCache``
satisfies it), through the published serving seam (``ServableModel.run_blocks``
with an ``InPlaceCacheWriter``):

- a model's cached prefix is a host-side count ``n``: the slots after the
  storage's own prefix hold the K/V of ``sequence[:n]``; the next call writes on;
- the draft proposes d_1..d_k one call each (its first call also catches up on the
  tokens it lacks); the target verifies all k in ONE call that writes their K/V
  at once and returns rows t_0..t_k (``lm_head`` only on those rows);
- at the first mismatch m, rollback is ``n = committed + m``: no copy, no slicing;
  stale slots beyond ``n`` are outside the next call's attended prefix and are
  overwritten when the sequence grows again;
- decisions and accounting follow the reference exactly (budget caps k, proposals
  stop after EOS, the bonus needs budget and no proposed EOS), so tokens equal the
  target's greedy decoding and the counts equal ``speculative_generate``'s.

At the end each storage's lengths advance over the slots its model kept, through
the storage's own ``append`` (the only way its contract grows lengths), once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from cache_aware_lm import (
    InPlaceCacheWriter,
    ModelGeometry,
    PastKeyValues,
    RequestStorage,
    ServableModel,
    folded_grouped_query_attention,
)

from .generate import SpeculativeOutput
from .validation import check_request

# (accepted draft tokens, the target's token or None, whether it replaced a proposal)
RoundCallback = Callable[[list[int], int | None, bool], None]


class ServingState:
    """One model over its request storage (batch 1): the K/V of ``sequence[:cached]``.

    ``sequence[i]`` lives in slot ``stored + i`` (``stored``: the storage's length
    before this request), at absolute position ``start + stored + i``.
    """

    def __init__(self, model: ServableModel, storage: RequestStorage) -> None:
        self.model = model
        self.storage = storage
        self.layers: PastKeyValues = tuple(storage.storage)
        self.start = int(storage.cache_start_positions[0])
        self.stored = int(storage.cache_lengths[0])
        self.cached = 0
        self._slot_S = torch.arange(self.layers[0][0].shape[2], device=self.layers[0][0].device)

    def feed(self, tokens: list[int], rows: int) -> Tensor:
        """Write ``tokens``' K/V after the cached prefix; logits of the last ``rows`` [rows, V]."""
        device = self._slot_S.device
        slots_1T = (self.stored + self.cached + torch.arange(len(tokens), device=device))[None]
        self.cached += len(tokens)
        length = self.stored + self.cached
        # Slot s is visible to the query in slot q iff s <= q (every slot < length is valid).
        mask = (self._slot_S[:length] <= slots_1T[:, :, None])[:, None]
        writer = InPlaceCacheWriter(self.layers, slots_1T, length)
        ids = torch.tensor([tokens], dtype=torch.long, device=device)
        hidden, _ = self.model.run_blocks(
            ids, self.start + slots_1T, mask, writer, folded_grouped_query_attention
        )
        logits: Tensor = self.model.lm_head(hidden[0, -rows:])
        return logits

    def rollback(self, cached: int) -> None:
        """Keep ``sequence[:cached]``: a length change, nothing is copied or freed."""
        self.cached = min(self.cached, cached)

    def commit(self) -> None:
        """Advance the storage's lengths over the kept slots (an idempotent ``append``)."""
        if self.cached == 0:
            return
        end = self.stored + self.cached
        slots_1N = torch.arange(self.stored, end, device=self._slot_S.device)[None]
        # A copy: the storage's append refuses views of its own memory (one copy per request).
        delta = tuple(
            (key[:, :, self.stored : end].clone(), value[:, :, self.stored : end].clone())
            for key, value in self.layers
        )
        self.storage.append(delta, self.start + slots_1N)


def serve_speculative_generate(
    target: ServableModel,
    draft: ServableModel,
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    num_speculative_tokens: int,
    target_storage: RequestStorage,
    draft_storage: RequestStorage,
    eos_token_id: int | None = None,
    *,
    on_round: RoundCallback | None = None,
) -> SpeculativeOutput:
    """Greedy draft-and-verify for one request, each model's K/V in its own storage.

    Same result as ``speculative_generate`` (tokens equal ``target``'s greedy
    decoding; same accounting). Each storage (batch 1) may already hold a cached
    prefix; ``positions[0, 0]`` must continue both (``start + length``). Capacity
    needed: stored length + T + ``max_new_tokens`` (the draft one less). Afterwards each storage
    holds, and its lengths count, the prompt and emitted tokens its model was fed
    and kept. ValueError, before anything is written, for a malformed request
    (as the reference), storage that does not match its model, positions that do
    not continue it, too little capacity, or different vocabularies.

    ``on_round(accepted, target_token, replaced)``, if given, hears every round as it
    ends: the accepted draft tokens, then the target's own token (its replacement
    of the first rejected proposal when ``replaced``, else the bonus; None when
    the round emitted none), for streaming.
    """
    # The reference's request checks: every position column, no int64 wraparound.
    check_request(
        target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id
    )
    # The target is fed up to the last budgeted token; the draft one token less.
    for name, model, storage, fed in (
        ("target", target, target_storage, max_new_tokens),
        ("draft", draft, draft_storage, max(max_new_tokens - 1, 0)),
    ):
        _check_storage(name, model.geometry, storage, positions, fed)
    if target.geometry.vocab_size != draft.geometry.vocab_size:
        raise ValueError(
            f"target and draft vocabularies differ: {target.geometry.vocab_size} vs "
            f"{draft.geometry.vocab_size}"
        )
    if max_new_tokens == 0:
        return SpeculativeOutput(input_ids.clone(), 0, 0, 0, 0)
    modes = (target.training, draft.training)
    target.train(False)
    draft.train(False)
    try:
        with torch.inference_mode():
            target_state = ServingState(target, target_storage)
            draft_state = ServingState(draft, draft_storage)
            output = _decode(
                target_state, draft_state, input_ids, max_new_tokens, num_speculative_tokens,
                eos_token_id, on_round,
            )  # fmt: skip
            target_state.commit()
            draft_state.commit()
    finally:
        target.train(modes[0])
        draft.train(modes[1])
    return output


def _decode(
    target: ServingState,
    draft: ServingState,
    input_ids: Tensor,
    max_new_tokens: int,
    width: int,
    eos_token_id: int | None,
    on_round: RoundCallback | None = None,
) -> SpeculativeOutput:
    """The rounds, with the reference's decisions; caches roll back by length only."""
    sequence: list[int] = input_ids[0].tolist()
    budget_end = len(sequence) + max_new_tokens
    proposed = accepted = verifications = 0
    while len(sequence) < budget_end:
        remaining, committed = budget_end - len(sequence), len(sequence)
        proposals = _propose(draft, sequence, min(width, remaining), eos_token_id)
        # One target call over what it lacks plus every proposal: k + 1 rows kept.
        pending = sequence[target.cached :] + proposals
        choices = target.feed(pending, len(proposals) + 1).argmax(dim=-1).tolist()
        m = next((i for i, d in enumerate(proposals) if choices[i] != d), len(proposals))
        verifications, proposed, accepted = (
            verifications + 1,
            proposed + len(proposals),
            accepted + m,
        )
        sequence.extend(proposals[:m])
        replaced = m < len(proposals)
        if replaced:
            draft.rollback(committed + m)
            sequence.append(choices[m])  # the target's token, never the draft's
        elif m < remaining and eos_token_id not in proposals:
            sequence.append(choices[m])  # the bonus
        if on_round is not None:
            emitted_own = len(sequence) > committed + m
            on_round(proposals[:m], choices[m] if emitted_own else None, replaced)
        # Rollback: the target keeps the sequence but its newest token (the next call feeds it).
        target.rollback(len(sequence) - 1)
        if eos_token_id is not None and eos_token_id in sequence[committed:]:
            break
    return SpeculativeOutput(
        tokens=torch.tensor([sequence], dtype=input_ids.dtype, device=input_ids.device),
        proposed_tokens=proposed,
        accepted_draft_tokens=accepted,
        discarded_draft_tokens=proposed - accepted,
        verification_steps=verifications,
    )


def _propose(
    draft: ServingState, sequence: list[int], count: int, eos_token_id: int | None
) -> list[int]:
    """Up to ``count`` greedy draft tokens, stopping right after EOS; the last one is not fed."""
    proposals: list[int] = []
    lacking = sequence[draft.cached :]  # at least the newest token
    while len(proposals) < count:
        proposals.append(int(draft.feed(lacking, 1)[0].argmax()))
        if proposals[-1] == eos_token_id:
            break
        lacking = proposals[-1:]
    return proposals


# ---- request checks (all before the first write) ---------------------------------------


def _check_storage(
    name: str,
    geometry: ModelGeometry,
    storage: RequestStorage,
    positions: Tensor,
    fed_new_tokens: int,
) -> None:
    """Storage layout against the model; positions continue it; the request fits it.

    ``fed_new_tokens``: how many generated tokens this model may be fed.
    """
    what = f"{name}_storage"
    layers = tuple(storage.storage)
    if len(layers) != geometry.n_layers:
        raise ValueError(f"{what} has {len(layers)} layers, the {name} {geometry.n_layers}")
    expected = (1, geometry.n_kv_heads, None, geometry.head_dim)
    for index, pair in enumerate(layers):
        for tensor in pair:
            shape = tuple(tensor.shape)
            if len(shape) != 4 or any(
                e is not None and e != s for e, s in zip(expected, shape, strict=True)
            ):
                raise ValueError(
                    f"{what}[{index}] must be [1, {geometry.n_kv_heads}, capacity, "
                    f"{geometry.head_dim}] for the {name}, got {shape}"
                )
            if tensor.dtype != geometry.dtype or tensor.device != geometry.device:
                raise ValueError(
                    f"{what}[{index}] must be {geometry.dtype} on {geometry.device}, got "
                    f"{tensor.dtype} on {tensor.device}"
                )
    if positions.device != geometry.device:
        raise ValueError(f"positions are on {positions.device}, the {name} on {geometry.device}")
    length, start = int(storage.cache_lengths[0]), int(storage.cache_start_positions[0])
    if int(positions[0, 0]) != start + length:
        raise ValueError(
            f"positions must continue {what}: positions[0, 0] must be start {start} + length "
            f"{length} = {start + length}, got {int(positions[0, 0])}"
        )
    last_position = int(positions[0, -1]) + fed_new_tokens
    if last_position >= geometry.context_length:
        raise ValueError(
            f"the budget needs position {last_position}, beyond the {name}'s context length "
            f"{geometry.context_length}"
        )
    capacity = layers[0][0].shape[2]
    needed = length + positions.shape[1] + fed_new_tokens
    if needed > capacity:
        raise ValueError(
            f"{what} needs {needed} slots (length {length} + {positions.shape[1]} prompt + "
            f"{fed_new_tokens} generated), more than its capacity {capacity}"
        )


__all__ = ["RoundCallback", "ServingState", "serve_speculative_generate"]
