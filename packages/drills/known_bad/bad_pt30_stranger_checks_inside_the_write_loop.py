"""A stranger's PT30 that checks each scheduled row just before writing it: a repeat or a
full row found late leaves the earlier rows of the step already written."""

VARIABLE = "DRILL_PT30_MODULE"
EXPECTED_OWNER = "pt30"


def apply_decode_step_(state, scheduled_rows, sampled_tokens, finished):
    N = len(scheduled_rows)
    if len(sampled_tokens) != N or len(finished) != N:
        raise ValueError("sampled_tokens and finished must match scheduled_rows")
    C = state["tokens"].shape[1]
    seen = set()
    for r, token, now in zip(scheduled_rows.tolist(), sampled_tokens.tolist(), finished.tolist()):
        if r in seen:
            raise ValueError(f"scheduled_rows repeat row {r}")
        seen.add(r)
        n = int(state["lengths"][r])
        if n >= C:
            raise ValueError(f"scheduled_rows: row {r} is full")
        state["tokens"][r, n] = token
        state["lengths"][r] += 1
        state["last_tokens"][r] = token
        state["done"][r] = bool(state["done"][r]) or now
