"""A stranger's PT15 that weighs each side by l_x * exp(m_x) directly, with no shift by the
merged max: exp overflows to inf (or underflows to 0) once a max passes about 88."""

import torch

VARIABLE = "DRILL_PT15_MODULE"
EXPECTED_OWNER = "pt15"


def merge_softmax_parts(m_a, l_a, o_a, m_b, l_b, o_b):
    m = torch.maximum(m_a, m_b)
    w_a, w_b = l_a * torch.exp(m_a), l_b * torch.exp(m_b)
    raw = w_a + w_b
    o = (w_a[..., None] * o_a + w_b[..., None] * o_b) / raw.clamp(min=1e-30)[..., None]
    return m, raw * torch.exp(-torch.where(m.isfinite(), m, 0.0)), o
