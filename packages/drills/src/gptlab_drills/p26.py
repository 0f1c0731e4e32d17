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

from ._describe import described


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
    if not _tensor(input_ids, 2) or input_ids.is_floating_point() or input_ids.is_complex():
        raise ValueError(f"input_ids must be an integer [B, T] tensor, got {described(input_ids)}")
    if not _tensor(inputs_embeds, 3) or not inputs_embeds.is_floating_point():
        raise ValueError(f"inputs_embeds must be float [B, T, C], got {described(inputs_embeds)}")
    if inputs_embeds.shape[:2] != input_ids.shape:
        raise ValueError(f"inputs_embeds {described(inputs_embeds)} vs input_ids [B, T] mismatch")
    if isinstance(placeholder_token_id, bool) or not isinstance(placeholder_token_id, int):
        raise TypeError(
            f"placeholder_token_id must be an int, got {described(placeholder_token_id)}"
        )
    placeholders = input_ids == placeholder_token_id
    counts = placeholders.sum(dim=1).tolist()
    if multimodal_embeddings is None:
        if any(counts):
            raise ValueError(f"multimodal_embeddings is None but rows hold placeholders {counts}")
        return placeholders
    B, _, C = inputs_embeds.shape
    if not isinstance(multimodal_embeddings, Sequence | Tensor):  # a generator has no length
        raise TypeError(
            f"multimodal_embeddings must be a sequence, got {described(multimodal_embeddings)}"
        )
    if len(multimodal_embeddings) != B:
        raise ValueError(f"multimodal_embeddings must hold {B} tensors (one per request)")
    for b, (rows, count) in enumerate(zip(multimodal_embeddings, counts, strict=True)):
        if not _tensor(rows, 2) or not rows.is_floating_point() or rows.shape[1] != C:
            raise ValueError(f"multimodal_embeddings[{b}] must be a float [n, {C}] tensor")
        if rows.shape[0] != count:
            raise ValueError(
                f"multimodal_embeddings[{b}] has {rows.shape[0]} rows for {count} placeholders"
            )
        if rows.device != inputs_embeds.device:
            raise ValueError(f"multimodal_embeddings[{b}] is on {rows.device}")
    return placeholders


def _tensor(value: object, dims: int) -> bool:
    """A tensor of `dims` dims holding data (a meta tensor has no values to merge)."""
    return isinstance(value, Tensor) and value.dim() == dims and not value.is_meta


__all__ = ["merge_multimodal_embeddings"]
