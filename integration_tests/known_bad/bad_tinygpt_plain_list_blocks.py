"""Blocks kept in a plain Python list: their parameters are invisible to the model.

`self.blocks = [Block(config) ...]` runs the same forward, but parameters(), state_dict(),
.to() and the optimizer never see the blocks.
"""

from __future__ import annotations

import tinygpt
from gptlab_testkit.mutants import export_with
from tinygpt import GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "registration"


class PlainListGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        blocks = list(self.blocks)
        del self.blocks  # unregister the ModuleList ...
        self.blocks = blocks  # type: ignore[assignment]  # ... and keep the blocks in a plain list


globals().update(export_with("tinygpt", TinyGPT=PlainListGPT))
