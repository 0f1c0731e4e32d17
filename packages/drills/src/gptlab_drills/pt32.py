"""PT32 exportable logits processor (transfer case; owner P27).

A module with no parameters turns a batch of logits into next-token probabilities:

    probs[b] = softmax(masked(logits[b] / temperature[b]))

where `masked` sets every token with `allowed[b, v] == False` to -inf. A row that allows
no token at all gets probability 0 everywhere (the all-masked policy), chosen with
`torch.where`, never a Python branch on data. A nonpositive temperature in any row is
rejected by a traceable assert (`torch._assert_async`), which stays in the exported graph.

`export_processor(vocab_size)` exports the module with `torch.export` for any batch size B
(a dynamic dim) and a fixed vocabulary V, and returns the program as the bytes
`torch.export.save` writes (a 1-D uint8 tensor): the form in which an exported program
leaves the process that made it.

Shapes: logits [B, V] float; temperature [B] float; allowed [B, V] bool -> [B, V] float32.
"""

from __future__ import annotations

import io

import torch
from torch import Tensor, nn


class LogitsProcessor(nn.Module):
    """forward(logits [B, V], temperature [B], allowed [B, V] bool) -> probs [B, V] fp32."""

    def forward(self, logits: Tensor, temperature: Tensor, allowed: Tensor) -> Tensor:
        torch._assert_async(torch.all(temperature > 0), "temperature must be > 0")
        scaled = logits / temperature[:, None]
        masked = scaled.masked_fill(~allowed, float("-inf"))
        any_allowed = allowed.any(dim=-1, keepdim=True)  # [B, 1]
        safe = torch.where(any_allowed, masked, torch.zeros_like(masked))  # no all -inf row
        probs = torch.softmax(safe, dim=-1)
        return torch.where(any_allowed, probs, torch.zeros_like(probs))


def export_processor(vocab_size: int) -> Tensor:
    """The processor exported for any B and this V (an int >= 1), saved: a 1-D uint8
    tensor of bytes."""
    examples = (
        torch.zeros(2, vocab_size),
        torch.ones(2),
        torch.ones(2, vocab_size, dtype=torch.bool),
    )
    batch = torch.export.Dim("batch")
    shapes = ({0: batch}, {0: batch}, {0: batch})  # V stays what the examples say
    program = torch.export.export(LogitsProcessor(), examples, dynamic_shapes=shapes)
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)


__all__ = ["LogitsProcessor", "export_processor"]
