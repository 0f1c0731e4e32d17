"""A stranger's P11 from the kit's words alone: a row check first (the one rejection the kit
names: an invalid row fails before sampling), greedy by argmax, else a sort-based top-k and
top-p on the tempered probabilities and one Tensor.multinomial; the rest left to torch."""

import torch

VARIABLE = "DRILL_P11_MODULE"


def _check_rows(logits):
    finite_any = torch.isfinite(logits).any(dim=-1)
    poisoned = (torch.isnan(logits) | torch.isposinf(logits)).any(dim=-1)
    if bool((poisoned | ~finite_any).any()):
        raise ValueError("logits: a row has a NaN, a +inf or no finite logit")


def _filter(probs, top_k, top_p):
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    keep = torch.ones_like(sorted_probs, dtype=torch.bool)
    if top_k:
        kth = sorted_probs[:, top_k - 1 : top_k]
        keep &= sorted_probs >= kth
    if top_p is not None and top_p < 1:
        kept = sorted_probs * keep
        kept = kept / kept.sum(dim=-1, keepdim=True)
        before = kept.cumsum(dim=-1) - kept
        inside = (before < top_p) & keep
        boundary = torch.where(inside, kept, torch.inf).amin(dim=-1, keepdim=True)
        keep &= kept >= boundary
    mask = torch.zeros_like(keep).scatter(-1, order, keep)
    return probs * mask


def sample_next_token(logits, *, temperature, top_k=None, top_p=None, generator):
    _check_rows(logits)
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    probs = _filter(probs, top_k, top_p)
    return probs.multinomial(1, generator=generator).flatten()
