"""A stranger's P26 from the kit's words alone: a clone of the text embeddings, each row's
placeholder slots found with nonzero and filled by indexed assignment; the one check the
kit names (each request's rows match its placeholder count), made for every row first."""

VARIABLE = "DRILL_P26_MODULE"


def merge_multimodal_embeddings(
    input_ids, inputs_embeds, multimodal_embeddings, placeholder_token_id
):
    slots = [(row == placeholder_token_id).nonzero().flatten() for row in input_ids]
    given = (
        [0] * len(slots)
        if multimodal_embeddings is None
        else [rows.shape[0] for rows in multimodal_embeddings]
    )
    for b, (where, count) in enumerate(zip(slots, given)):
        if where.numel() != count:
            raise ValueError(
                f"multimodal_embeddings[{b}] has {count} rows for {where.numel()} placeholders"
            )
    merged = inputs_embeds.clone()
    for b, where in enumerate(slots):
        if where.numel():
            merged[b, where] = multimodal_embeddings[b].to(merged.dtype)
    return merged
