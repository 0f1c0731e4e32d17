"""The projections are initialised from a generator of their own, seeded from the OS:
two constructions after the same torch.manual_seed differ."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_interface"
CLAUSE = "M10.11"

model = mutated_module(
    "fragment_lm.model",
    [
        ("from torch import Tensor, nn\n", "import torch\nfrom torch import Tensor, nn\n"),
        (
            "nn.init.normal_(module.weight, std=INITIALIZER_RANGE)",
            "nn.init.normal_(\n"
            "            module.weight, std=INITIALIZER_RANGE, generator=torch.Generator().manual_seed(\n"
            "                int.from_bytes(__import__('os').urandom(7), 'little')\n"
            "            )\n"
            "        )",
        ),
    ],
)
globals().update(export_with("fragment_lm", model))
