"""A stranger's P26 from the README contract alone: checks counts per request first, then
one masked_scatter per request on a copy, under inference_mode."""

import torch

VARIABLE = "DRILL_P26_MODULE"


@torch.inference_mode()
def merge_multimodal_embeddings(
    input_ids, inputs_embeds, multimodal_embeddings, placeholder_token_id
):
    is_image = input_ids == placeholder_token_id
    per_request = is_image.sum(dim=1).tolist()
    if multimodal_embeddings is None:
        if sum(per_request):
            raise ValueError("placeholders present but multimodal_embeddings is None")
        multimodal_embeddings = [inputs_embeds.new_empty(0, inputs_embeds.shape[-1])] * len(
            per_request
        )
    if len(multimodal_embeddings) != len(per_request):
        raise ValueError("multimodal_embeddings must have one tensor per request")
    if input_ids.ndim != 2 or inputs_embeds.ndim != 3 or inputs_embeds.shape[:2] != input_ids.shape:
        raise ValueError("inputs_embeds must be [B, T, C] for input_ids [B, T]")
    width = inputs_embeds.shape[-1]
    for b, (rows, n) in enumerate(zip(multimodal_embeddings, per_request)):
        if rows.ndim != 2 or rows.shape[1] != width or rows.shape[0] != n:
            raise ValueError(f"multimodal_embeddings[{b}] must be [{n}, {width}]")
    out = inputs_embeds.clone()
    for b, rows in enumerate(multimodal_embeddings):
        mask = is_image[b].unsqueeze(-1).expand(-1, width)
        out[b] = out[b].masked_scatter(mask, rows.to(out.dtype))
    return out
