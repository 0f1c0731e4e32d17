"""A stranger's PT14 from the kit's words alone: no validation (the kit names no
rejection), float64 inside, torch.logsumexp over the -inf-filled slice, weights cleared of
NaN with nan_to_num and of masked entries with a multiply by the mask, keepdim passed on;
+inf handled by the limit of the softmax."""

import torch

VARIABLE = "DRILL_PT14_MODULE"


def masked_logsumexp(x, valid, dim, keepdim=False):
    filled = x.double().masked_fill(valid.logical_not(), float("-inf"))
    lse = torch.logsumexp(filled, dim, keepdim=True)
    plus_inf = torch.isposinf(filled)
    weights = (
        torch.where(
            torch.isposinf(lse),
            plus_inf / plus_inf.sum(dim, keepdim=True).clamp(min=1),
            torch.exp(filled - lse),
        ).nan_to_num(0.0)
        * valid
    )
    empty = valid.sum(dim, keepdim=keepdim) == 0
    if not keepdim:
        lse = lse.squeeze(dim)
    return lse.to(x.dtype), weights.to(x.dtype), empty
