"""A stranger's PT14 that takes a keepdim option and ignores it: the reduced dim is always
dropped."""

import torch

VARIABLE = "DRILL_PT14_MODULE"
EXPECTED_OWNER = "pt14"


def masked_logsumexp(x, valid, dim, keepdim=False):
    filled = x.double().masked_fill(~valid, -torch.inf)
    lse = torch.logsumexp(filled, dim=dim)
    weights = torch.exp(filled - lse.unsqueeze(dim)).nan_to_num(0.0)
    return lse.to(x.dtype), weights.to(x.dtype), ~valid.any(dim=dim)
