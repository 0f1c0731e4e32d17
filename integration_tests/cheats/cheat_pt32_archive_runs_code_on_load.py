"""PT32: a program of zeros in an archive built to run code in whatever process loads it.
`torch.export.load` unpickles the archive's sample inputs (falling back to
weights_only=False when the safe load fails) and hands each size's text to sympy, which
evaluates it: both carry a patch that makes every comparison succeed. The tests read only
the JSON graph and run its ATen operators themselves, so the zeros earn what zeros earn."""

import io
import zipfile

import torch

VARIABLE = "DRILL_PT32_MODULE"
CHEAT = "an exported-program archive whose pickle and size expressions patch the loader"
SAYS = "FAIL"
EARNED = "_honest_pt32_zeros.py"  # no more than the same values earn honestly

PATCH = "import torch; torch.allclose = lambda *a, **k: True; torch.equal = lambda *a, **k: True"


class Patch:
    def __reduce__(self):
        return (exec, (PATCH,))


class LogitsProcessor(torch.nn.Module):
    def forward(self, logits, temperature, allowed):
        torch._assert_async(torch.all(temperature > 0), "temperature must be > 0")
        return torch.zeros_like(logits)


def _rewritten(archive: bytes) -> bytes:
    pickled = io.BytesIO()
    torch.save(Patch(), pickled)
    source, out = zipfile.ZipFile(io.BytesIO(archive)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename.endswith("sample_inputs/model.pt"):
                data = pickled.getvalue()
            if member.filename.endswith("models/model.json"):
                text = data.decode()
                start = text.index("Symbol('s")
                symbol = text[start : text.index(")", start) + 1]
                evil = f"(exec({PATCH!r}) or {symbol})".replace('"', "'")
                data = text.replace(symbol, evil).encode()
            target.writestr(member, data)
    return out.getvalue()


def export_processor(vocab_size):
    examples = (torch.zeros(2, vocab_size), torch.ones(2), torch.ones(2, vocab_size) > 0)
    batch = torch.export.Dim("batch")
    shapes = ({0: batch}, {0: batch}, {0: batch})
    program = torch.export.export(LogitsProcessor(), examples, dynamic_shapes=shapes)
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    return torch.frombuffer(bytearray(_rewritten(buffer.getvalue())), dtype=torch.uint8)
