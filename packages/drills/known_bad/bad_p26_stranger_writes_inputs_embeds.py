"""A stranger writes the encoder rows into the caller's inputs_embeds and returns it (a
write where a new tensor was promised)."""

VARIABLE = "DRILL_P26_MODULE"
EXPECTED_OWNER = "p26"


def merge_multimodal_embeddings(
    input_ids, inputs_embeds, multimodal_embeddings, placeholder_token_id
):
    if input_ids.shape != inputs_embeds.shape[:2]:
        raise ValueError("input_ids must be [B, T] matching inputs_embeds")
    batch = input_ids.shape[0]
    rows = multimodal_embeddings if multimodal_embeddings is not None else [None] * batch
    if len(rows) != batch:
        raise ValueError("multimodal_embeddings: one entry per request")
    for b in range(batch):
        slots = (input_ids[b] == placeholder_token_id).nonzero().flatten()
        n = 0 if rows[b] is None else rows[b].shape[0]
        if n != slots.numel():
            raise ValueError(f"multimodal_embeddings[{b}]: {n} rows, {slots.numel()} placeholders")
        if n and rows[b].shape[1] != inputs_embeds.shape[2]:
            raise ValueError(f"multimodal_embeddings[{b}] has the wrong width")
    for b in range(batch):
        slots = (input_ids[b] == placeholder_token_id).nonzero().flatten()
        if slots.numel():
            inputs_embeds[b, slots] = rows[b].to(inputs_embeds.dtype)
    return inputs_embeds
