"""Blocks kept in a plain Python list: their parameters are invisible to the model.

`self.blocks = [Block(config) ...]` runs the same forward, but parameters(), state_dict(),
.to() and the optimizer never see the blocks.
"""

from __future__ import annotations

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "registration"


class TinyGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        blocks = list(self.blocks)
        del self.blocks  # unregister the ModuleList ...
        self.blocks = blocks  # type: ignore[assignment]  # ... and keep the blocks in a plain list


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
