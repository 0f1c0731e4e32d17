"""P26 multimodal embedding merge: encoder rows replace placeholder tokens, per request.

Request b's prompt holds one placeholder token for every row its encoder produced (all its
images, in order). The merge writes those rows, in order, over the placeholder positions of
row b and nowhere else: counts are checked per request, never only in total, so one
request's image can never land in another's prompt. A text-only batch (no encoder rows)
passes straight through. The result is a new tensor; the caller's embeddings are unchanged.

Shapes: input_ids [B, T] integer; inputs_embeds [B, T, C]; multimodal_embeddings: None or
B tensors [n_b, C] (n_b = row b's placeholder count, 0 allowed); placeholder_token_id int.
Returns [B, T, C] in inputs_embeds' dtype.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor


def merge_multimodal_embeddings(
    input_ids: Tensor,
    inputs_embeds: Tensor,
    multimodal_embeddings: Sequence[Tensor] | None,
    placeholder_token_id: int,
) -> Tensor:
    """inputs_embeds with row b's placeholders replaced by multimodal_embeddings[b], in order."""
    placeholders = _check(input_ids, inputs_embeds, multimodal_embeddings, placeholder_token_id)
    merged = inputs_embeds.clone()
    for b, rows in enumerate(multimodal_embeddings or ()):
        # nonzero is ascending: the encoder's rows fill the placeholders left to right.
        slots = placeholders[b].nonzero().flatten()
        merged[b, slots] = rows.to(merged.dtype)
    return merged


def _check(
    input_ids: Tensor,
    inputs_embeds: Tensor,
    multimodal_embeddings: Sequence[Tensor] | None,
    placeholder_token_id: int,
) -> Tensor:
    """Reject mismatched shapes and per-request counts; return the [B, T] placeholder mask."""
    if not isinstance(input_ids, Tensor) or input_ids.dim() != 2 or input_ids.is_floating_point():
        raise ValueError("input_ids must be an integer [B, T] tensor")
    if not isinstance(inputs_embeds, Tensor) or inputs_embeds.dim() != 3:
        raise ValueError("inputs_embeds must be a [B, T, C] tensor")
    if inputs_embeds.shape[:2] != input_ids.shape:
        raise ValueError(
            f"inputs_embeds {list(inputs_embeds.shape)} does not match input_ids "
            f"{list(input_ids.shape)}"
        )
    placeholders = input_ids == placeholder_token_id
    counts = placeholders.sum(dim=1).tolist()
    if multimodal_embeddings is None:
        if any(counts):
            raise ValueError(f"multimodal_embeddings is None but rows hold placeholders {counts}")
        return placeholders
    B, _, C = inputs_embeds.shape
    if len(multimodal_embeddings) != B:
        raise ValueError(f"multimodal_embeddings must hold {B} tensors (one per request)")
    for b, (rows, count) in enumerate(zip(multimodal_embeddings, counts, strict=True)):
        if not isinstance(rows, Tensor) or rows.dim() != 2 or rows.shape[1] != C:
            raise ValueError(f"multimodal_embeddings[{b}] must be an [n, {C}] tensor")
        if rows.shape[0] != count:
            raise ValueError(
                f"multimodal_embeddings[{b}] has {rows.shape[0]} rows for {count} placeholders"
            )
        if rows.device != inputs_embeds.device:
            raise ValueError(f"multimodal_embeddings[{b}] is on {rows.device}")
    return placeholders


__all__ = ["merge_multimodal_embeddings"]
