"""The honest twin of the PT32 archive cheat: zeros, exported and saved as they are."""

import io

import torch


class LogitsProcessor(torch.nn.Module):
    def forward(self, logits, temperature, allowed):
        torch._assert_async(torch.all(temperature > 0), "temperature must be > 0")
        return torch.zeros_like(logits)


def export_processor(vocab_size):
    examples = (torch.zeros(2, vocab_size), torch.ones(2), torch.ones(2, vocab_size) > 0)
    batch = torch.export.Dim("batch")
    shapes = ({0: batch}, {0: batch}, {0: batch})
    program = torch.export.export(LogitsProcessor(), examples, dynamic_shapes=shapes)
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
