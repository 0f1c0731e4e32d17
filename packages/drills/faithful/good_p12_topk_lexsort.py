"""A stranger's P12 from the README alone: log-probs in float64, the tie rule by ranking
score first and flat index second (a key sort), finished beams masked by index_put."""

import math

import torch

VARIABLE = "DRILL_P12_MODULE"


def _floating(name, value):
    if not torch.is_tensor(value) or not value.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, not {type(value).__name__}")
    if value.is_meta:
        raise ValueError(f"{name} is a meta tensor: no values to rank")


def beam_step(scores, logits, finished=None, eos_token_id=None):
    _floating("scores", scores)
    _floating("logits", logits)
    if logits.device != scores.device:
        raise ValueError(f"logits are on {logits.device}, scores on {scores.device}")
    if finished is not None:
        if not torch.is_tensor(finished) or finished.dtype != torch.bool:
            raise ValueError("finished must be a bool tensor")
        if finished.shape != scores.shape or finished.device != scores.device:
            raise ValueError("finished must have scores' shape [B, K] and device")
        bad_eos = isinstance(eos_token_id, bool) or not isinstance(eos_token_id, int)
        if bad_eos or not 0 <= eos_token_id < logits.shape[-1]:
            raise ValueError(f"eos_token_id {eos_token_id!r} is not a token of the vocabulary")
    if scores.ndim != 2 or logits.ndim != 3 or logits.shape[:2] != scores.shape:
        raise ValueError(f"scores {tuple(scores.shape)} vs logits {tuple(logits.shape)}")
    if logits.shape[-1] == 0:
        raise ValueError("logits has an empty vocabulary")
    if bool(torch.isnan(scores).any()) or bool((scores == math.inf).any()):
        raise ValueError("scores has a NaN or +inf")
    live_rows = ~torch.isfinite(logits).any(-1)
    if finished is not None:
        live_rows &= ~finished
    if bool((torch.isnan(logits) | torch.isposinf(logits)).any()) or bool(live_rows.any()):
        raise ValueError("logits has a NaN, a +inf or a live beam without a finite logit")
    b, k, v = logits.shape
    total = scores.double().unsqueeze(-1) + logits.double().log_softmax(-1)
    if finished is not None:
        total = total.clone()
        total[finished] = -math.inf
        rows, beams = finished.nonzero(as_tuple=True)
        total[rows, beams, eos_token_id] = scores.double()[rows, beams]
    flat_scores = total.reshape(b, k * v)
    # sort by flat index first, then stably by score: equal scores stay in index order
    index = torch.arange(k * v, device=logits.device).expand(b, -1)
    _, by_score = flat_scores.sort(dim=-1, descending=True, stable=True)
    chosen = index.gather(1, by_score)[:, :k]
    return (
        flat_scores.gather(1, chosen).float(),
        chosen % v,
        torch.div(chosen, v, rounding_mode="floor"),
    )
