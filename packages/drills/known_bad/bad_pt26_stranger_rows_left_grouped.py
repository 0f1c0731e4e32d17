"""A stranger's PT26 that sorts the rows by adapter to group them and returns the result in
that sorted order, not the original one."""

import torch

VARIABLE = "DRILL_PT26_MODULE"
EXPECTED_OWNER = "pt26"


def multi_lora_linear(x, adapter_ids, weight, bias, a_bank, b_bank, scales):
    A = a_bank.shape[0]
    if bool(((adapter_ids < -1) | (adapter_ids >= A)).any()):
        raise ValueError("adapter_ids hold an unknown adapter")
    if a_bank.shape[1] != b_bank.shape[2]:
        raise ValueError("a_bank and b_bank disagree on the rank")
    order = torch.argsort(adapter_ids, stable=True)
    ids, xs = adapter_ids[order], x[order]
    out = xs @ weight.T + (bias if bias is not None else 0)
    for adapter in torch.unique(ids[ids >= 0]).tolist():
        rows = ids == adapter
        out[rows] += scales[adapter] * (xs[rows] @ a_bank[adapter].T) @ b_bank[adapter].T
    return out
