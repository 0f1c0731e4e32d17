"""A stranger's P26 from the README contract alone whose errors name the mismatched
argument rather than `multimodal_embeddings`: a count is blamed on input_ids' placeholders,
a width on inputs_embeds (the contract accepts either name)."""

import torch

VARIABLE = "DRILL_P26_MODULE"


def merge_multimodal_embeddings(
    input_ids, inputs_embeds, multimodal_embeddings, placeholder_token_id
):
    if (
        input_ids.dim() != 2
        or inputs_embeds.dim() != 3
        or inputs_embeds.shape[:2] != input_ids.shape
    ):
        raise ValueError(
            f"inputs_embeds {tuple(inputs_embeds.shape)} is not [B, T, C] for input_ids"
        )
    holes = input_ids == placeholder_token_id
    counts = holes.sum(dim=1).tolist()
    if multimodal_embeddings is None:
        if any(counts):
            raise ValueError(f"input_ids holds placeholders {counts} but no encoder rows came")
        return inputs_embeds.clone()
    if len(multimodal_embeddings) != len(counts):
        raise ValueError(f"input_ids has {len(counts)} requests, got {len(multimodal_embeddings)}")
    width = inputs_embeds.shape[2]
    for b, rows in enumerate(multimodal_embeddings):
        if rows.dim() != 2 or rows.shape[1] != width:
            raise ValueError(f"inputs_embeds is {width} wide, request {b}'s rows are not")
        if rows.shape[0] != counts[b]:
            raise ValueError(
                f"input_ids row {b} holds {counts[b]} placeholders, not {rows.shape[0]}"
            )
    merged = inputs_embeds.clone()
    for b, rows in enumerate(multimodal_embeddings):
        positions = torch.nonzero(holes[b]).flatten()
        for j, t in enumerate(positions.tolist()):
            merged[b, t] = rows[j].to(merged.dtype)
    return merged
