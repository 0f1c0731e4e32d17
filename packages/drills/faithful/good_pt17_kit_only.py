"""A stranger's PT17 from the kit's words alone: the one rejection the kit names (positions
that decrease within a valid sequence) checked with diff, then one broadcast comparison of
[B, Tq, 1] against [B, 1, Tk]; nothing else validated."""

VARIABLE = "DRILL_PT17_MODULE"


def _decreases(positions, valid=None):
    if positions.shape[1] < 2:
        return False
    if valid is None:
        return bool((positions.diff(dim=1) < 0).any())
    for row, keep in zip(positions, valid):
        kept = row[keep]
        if kept.numel() > 1 and bool((kept.diff() < 0).any()):
            return True
    return False


def position_causal_mask(query_positions, key_positions, key_valid):
    if _decreases(query_positions):
        raise ValueError("query_positions decrease within a row")
    if _decreases(key_positions, key_valid):
        raise ValueError("key_positions of valid keys decrease within a row")
    seen = key_positions[:, None, :] <= query_positions[:, :, None]
    return (seen & key_valid[:, None, :])[:, None]
