"""A stranger's PT30 from the kit's words alone: the kit's three rejections (duplicate rows,
inconsistent lengths, a full row; messages naming the row), all of them before a loop of
per-row writes; `done` assigned from `finished` (the contract never schedules a done row);
nothing else validated."""

VARIABLE = "DRILL_PT30_MODULE"


def apply_decode_step_(state, scheduled_rows, sampled_tokens, finished):
    rows, tokens, flags = scheduled_rows.tolist(), sampled_tokens.tolist(), finished.tolist()
    if len(tokens) != len(rows):
        raise ValueError(f"{len(tokens)} sampled_tokens for {len(rows)} scheduled rows")
    if len(flags) != len(rows):
        raise ValueError(f"{len(flags)} finished flags for {len(rows)} scheduled rows")
    seen = set()
    for r in rows:
        if r in seen:
            raise ValueError(f"row {r} is scheduled twice")
        seen.add(r)
    capacity = state["tokens"].shape[1]
    lengths = state["lengths"].tolist()
    for r in rows:
        if lengths[r] >= capacity:
            raise ValueError(f"row {r} has no free slot left")
    for r, token, now in zip(rows, tokens, flags):
        state["tokens"][r, lengths[r]] = token
        state["lengths"][r] = lengths[r] + 1
        state["last_tokens"][r] = token
        state["done"][r] = now or bool(state["done"][r])
