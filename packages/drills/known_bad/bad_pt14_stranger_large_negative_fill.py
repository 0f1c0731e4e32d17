"""A stranger's PT14 that fills masked entries with -1e9 instead of -inf: a fully masked
slice comes back as -1e9 + log(n) with every (masked) entry weighted 1/n."""

import torch

VARIABLE = "DRILL_PT14_MODULE"
EXPECTED_OWNER = "pt14"


def masked_logsumexp(x, valid, dim, keepdim=False):
    filled = x.float().masked_fill(~valid, -1e9)
    lse = torch.logsumexp(filled, dim=dim, keepdim=True)
    weights = torch.exp(filled - lse).nan_to_num(0.0)
    empty = ~valid.any(dim=dim, keepdim=True)
    if not keepdim:
        lse, empty = lse.squeeze(dim), empty.squeeze(dim)
    return lse.to(x.dtype), weights.to(x.dtype), empty
