"""A stranger's PT26 from the kit's words alone: the two rejections the kit names (unknown ids,
rank mismatch; a message naming the bad id), then float64 inside: a one-hot [N, A] routing
matrix masks every adapter's update (every adapter on every row, the costly form the kit
compares with grouping), -1 rows routed to none; nothing else validated."""

import torch

VARIABLE = "DRILL_PT26_MODULE"


def multi_lora_linear(x, adapter_ids, weight, bias, a_bank, b_bank, scales):
    A = a_bank.shape[0]
    unknown = adapter_ids[(adapter_ids < -1) | (adapter_ids >= A)]
    if unknown.numel():
        raise ValueError(f"adapter id {int(unknown[0])} is not in the bank of {A}")
    if a_bank.shape[1] != b_bank.shape[2]:
        raise ValueError(f"a_bank rank {a_bank.shape[1]} != b_bank rank {b_bank.shape[2]}")
    xd = x.double()
    out = xd @ weight.double().T
    if bias is not None:
        out = out + bias.double()
    if A:
        route = torch.zeros(len(adapter_ids), A + 1, dtype=torch.float64, device=x.device)
        route[torch.arange(len(adapter_ids)), adapter_ids.long() % (A + 1)] = 1.0  # -1 -> slot A
        low = torch.einsum("ni,ari->anr", xd, a_bank.double())
        every = torch.einsum("anr,aor->ano", low, b_bank.double()) * scales.double()[:, None, None]
        out = out + torch.einsum("na,ano->no", route[:, :A], every)
    return out.to(x.dtype)
