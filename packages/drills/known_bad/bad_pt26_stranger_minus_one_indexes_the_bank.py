"""A stranger's PT26 that gathers each row's adapter with a_bank[adapter_ids]: an id of -1
silently picks the bank's last adapter instead of the base layer alone."""

import torch

VARIABLE = "DRILL_PT26_MODULE"
EXPECTED_OWNER = "pt26"


def multi_lora_linear(x, adapter_ids, weight, bias, a_bank, b_bank, scales):
    A = a_bank.shape[0]
    if bool(((adapter_ids < -1) | (adapter_ids >= A)).any()):
        raise ValueError("adapter_ids hold an unknown adapter")
    if a_bank.shape[1] != b_bank.shape[2]:
        raise ValueError("a_bank and b_bank disagree on the rank")
    out = x @ weight.T + (bias if bias is not None else 0)
    if len(adapter_ids) and A:
        low = torch.einsum("ni,nri->nr", x, a_bank[adapter_ids])
        update = torch.einsum("nr,nor->no", low, b_bank[adapter_ids])
        out = out + update * scales[adapter_ids][:, None]
    return out
