"""A stranger's sampler draws from the global RNG: the caller's generator is accepted but unused."""

import torch

VARIABLE = "DRILL_P11_MODULE"
EXPECTED_OWNER = "p11"


def sample_next_token(logits, *, temperature, top_k=None, top_p=None, generator):
    if logits.dim() != 2 or torch.isnan(logits).any() or (logits == float("inf")).any():
        raise ValueError("logits must be [B, V] without NaN or +inf")
    if not torch.isfinite(logits).any(dim=-1).all():
        raise ValueError("logits has a row with no finite logit")
    if temperature < 0 or temperature != temperature or temperature == float("inf"):
        raise ValueError("temperature must be finite and >= 0")
    if top_k is not None and not 0 <= top_k <= logits.shape[-1]:
        raise ValueError("top_k out of range")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError("top_p must be in (0, 1]")
    if temperature == 0:
        return logits.argmax(-1)
    scores = logits.float() / temperature
    if top_k:
        kth = scores.topk(top_k, dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1:
        ordered, index = scores.sort(dim=-1, descending=True)
        probs = ordered.softmax(-1)
        drop = probs.cumsum(-1) - probs >= top_p
        drop[:, 0] = False
        scores = scores.masked_fill(drop.scatter(1, index, drop), float("-inf"))
    return torch.multinomial(scores.softmax(-1), 1).squeeze(1)
