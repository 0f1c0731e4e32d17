"""A stranger merges the way a flattened-batch server does: all placeholders at once, one
concatenation of every request's rows, and only the batch-wide count checked (so rows can
cross from one request into another's prompt)."""

import torch

VARIABLE = "DRILL_P26_MODULE"
EXPECTED_OWNER = "p26"


def merge_multimodal_embeddings(
    input_ids, inputs_embeds, multimodal_embeddings, placeholder_token_id
):
    if input_ids.shape != inputs_embeds.shape[:2]:
        raise ValueError("input_ids and inputs_embeds disagree on [B, T]")
    mask = input_ids == placeholder_token_id
    out = inputs_embeds.clone()
    if multimodal_embeddings is None:
        if mask.any():
            raise ValueError("multimodal_embeddings missing for placeholder tokens")
        return out
    if len(multimodal_embeddings) != input_ids.shape[0]:
        raise ValueError("multimodal_embeddings needs one entry per request")
    if any(r.shape[-1] != inputs_embeds.shape[-1] for r in multimodal_embeddings):
        raise ValueError("multimodal_embeddings width differs from inputs_embeds")
    flat = torch.cat(list(multimodal_embeddings)).to(out.dtype)
    if flat.shape[0] != int(mask.sum()):
        raise ValueError(
            f"multimodal_embeddings: {flat.shape[0]} rows for {int(mask.sum())} placeholders"
        )
    out[mask] = flat
    return out
