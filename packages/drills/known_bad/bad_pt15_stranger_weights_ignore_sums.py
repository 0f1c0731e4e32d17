"""A stranger's PT15 that weighs the outputs by exp(m_x - m) alone, forgetting each side's
l (as if every partition held one key)."""

import torch

VARIABLE = "DRILL_PT15_MODULE"
EXPECTED_OWNER = "pt15"


def merge_softmax_parts(m_a, l_a, o_a, m_b, l_b, o_b):
    m = torch.maximum(m_a, m_b)
    safe = torch.where(m.isfinite(), m, torch.zeros_like(m))
    s_a, s_b = torch.exp(m_a - safe), torch.exp(m_b - safe)
    total = l_a * s_a + l_b * s_b
    o = (s_a[..., None] * o_a + s_b[..., None] * o_b) / (s_a + s_b).clamp(min=1e-30)[..., None]
    return m, total, o.to(o_a.dtype)
