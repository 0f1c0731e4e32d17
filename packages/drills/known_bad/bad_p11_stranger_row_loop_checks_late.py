"""A stranger samples row by row and checks each row inside the loop: row 0 is drawn
(the generator advanced) before row 1's NaN is found."""

import torch

VARIABLE = "DRILL_P11_MODULE"
EXPECTED_OWNER = "p11"


def sample_next_token(logits, *, temperature, top_k=None, top_p=None, generator):
    if logits.ndim != 2:
        raise ValueError("logits must be [B, V]")
    if not temperature >= 0 or temperature == float("inf"):
        raise ValueError("temperature must be finite and >= 0")
    if top_k is not None and not 0 <= top_k <= logits.shape[1]:
        raise ValueError("top_k must be in 0..V")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError("top_p must be in (0, 1]")
    out = torch.empty(logits.shape[0], dtype=torch.long, device=logits.device)
    for b, row in enumerate(logits):
        if torch.isnan(row).any() or (row == float("inf")).any() or torch.isinf(row).all():
            raise ValueError(f"logits row {b} is invalid")
        if temperature == 0:
            out[b] = row.argmax()
            continue
        x = row.float() / temperature
        if top_k:
            x[x < x.topk(top_k).values[-1]] = float("-inf")
        if top_p is not None and top_p < 1:
            s, i = x.sort(descending=True)
            p = s.softmax(0)
            cut = (p.cumsum(0) - p) >= top_p
            cut[0] = False
            x[torch.zeros_like(cut).scatter(0, i, cut)] = float("-inf")
        out[b] = torch.multinomial(x.softmax(0), 1, generator=generator)[0]
    return out
