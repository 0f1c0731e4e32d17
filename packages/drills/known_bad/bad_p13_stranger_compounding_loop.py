"""A stranger loops over the history and penalises in place per occurrence: a token seen
three times is divided three times, and the caller's logits are written."""

VARIABLE = "DRILL_P13_MODULE"
EXPECTED_OWNER = "p13"


def apply_repetition_penalty(logits, history, penalty):
    if history.ndim != 2 or history.shape[0] != logits.shape[0] or history.is_floating_point():
        raise ValueError("history must be integer [B, T]")
    if history.numel() and (history.min() < 0 or history.max() >= logits.shape[1]):
        raise ValueError("history holds an id outside the vocabulary")
    if not penalty > 0 or penalty == float("inf"):
        raise ValueError("penalty must be finite and > 0")
    for b in range(history.shape[0]):
        for token in history[b].tolist():
            if logits[b, token] > 0:
                logits[b, token] /= penalty
            else:
                logits[b, token] *= penalty
    return logits
