"""A stranger's PT15 from the kit's words and the stated convention alone: no validation
(the kit names no rejection), float64 inside, each side rescaled through its logsumexp
(lse = m + log l) rather than its max, and nan_to_num to clear two empty parts."""

import torch

VARIABLE = "DRILL_PT15_MODULE"


def merge_softmax_parts(m_a, l_a, o_a, m_b, l_b, o_b):
    lse_a, lse_b = m_a.double() + l_a.double().log(), m_b.double() + l_b.double().log()
    lse = torch.logaddexp(lse_a, lse_b)
    p_a = torch.exp(lse_a - lse).nan_to_num(0.0).unsqueeze(-1)
    p_b = torch.exp(lse_b - lse).nan_to_num(0.0).unsqueeze(-1)
    o = p_a * o_a.double() + p_b * o_b.double()
    m = torch.maximum(m_a, m_b).float()
    l = torch.exp(lse - torch.where(torch.isinf(m), 0.0, m.double())).float()
    return m, l, o.to(o_a.dtype)
