"""A stranger's PT32 from the kit's words alone: float64 inside, the all-masked rows
zeroed by multiplying with a 0/1 row flag (no branch on data), the temperature asserted
with torch._assert_async, a batch Dim with bounds of its own, and the saved archive copied
out byte by byte."""

import io

import torch

VARIABLE = "DRILL_PT32_MODULE"


class LogitsProcessor(torch.nn.Module):
    def forward(self, logits, temperature, allowed):
        torch._assert_async((temperature > 0).all(), "temperature: every row must be > 0")
        z = logits.double() / temperature.double().unsqueeze(-1)
        z = torch.where(allowed, z, torch.full_like(z, -1e300))
        z = z - z.amax(dim=-1, keepdim=True)
        e = torch.exp(z) * allowed
        total = e.sum(dim=-1, keepdim=True)
        some = (total > 0).double()
        return (e / (total + (1 - some)) * some).float()


def export_processor(vocab_size):
    B = torch.export.Dim("B", min=1, max=4096)
    example = (torch.randn(3, vocab_size), torch.ones(3), torch.ones(3, vocab_size) > 0)
    program = torch.export.export(
        LogitsProcessor(),
        example,
        dynamic_shapes={"logits": {0: B}, "temperature": {0: B}, "allowed": {0: B}},
    )
    out = io.BytesIO()
    torch.export.save(program, out)
    return torch.tensor(list(out.getvalue()), dtype=torch.uint8)
