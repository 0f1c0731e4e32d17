"""A stranger's P07 from the kit's words alone: masked_fill of the forbidden tokens with
-inf on a copy; the rejections the kit names (a shape mismatch, legibly; an all-forbidden
row, per this contract), the rest left to torch."""

VARIABLE = "DRILL_P07_MODULE"


def masked_logits(logits, allowed):
    if allowed.shape != logits.shape:
        raise ValueError(f"allowed has shape {tuple(allowed.shape)}, logits {tuple(logits.shape)}")
    if bool((~allowed.any(dim=-1)).any()):
        raise ValueError("allowed forbids every token of a row")
    return logits.masked_fill(~allowed, float("-inf"))
