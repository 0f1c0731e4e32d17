"""A stranger divides every repeated token's logit by the penalty: a negative logit moves
towards zero, so the "penalty" makes that repeat more likely."""

VARIABLE = "DRILL_P13_MODULE"
EXPECTED_OWNER = "p13"


def apply_repetition_penalty(logits, history, penalty):
    if history.ndim != 2 or history.shape[0] != logits.shape[0] or history.is_floating_point():
        raise ValueError("history must be integer [B, T]")
    if history.numel() and (history.min() < 0 or history.max() >= logits.shape[1]):
        raise ValueError("history holds an id outside the vocabulary")
    if not penalty > 0 or penalty == float("inf"):
        raise ValueError("penalty must be finite and > 0")
    out = logits.clone()
    picked = out.gather(1, history.long())
    out.scatter_(1, history.long(), picked / penalty)
    return out
