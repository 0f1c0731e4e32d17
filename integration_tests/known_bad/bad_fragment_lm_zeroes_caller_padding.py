"""The forward "tidies" the caller's cache: slots past each row's length are zeroed in
place. The outputs are right; the caller's tensors are not its own any more."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_cache"
CLAUSE = "M10.5"

model = mutated_module(
    "fragment_lm.model",
    [
        ("from torch import Tensor, nn\n", "import torch\nfrom torch import Tensor, nn\n"),
        (
            "        T = input_ids.shape[1]\n",
            "        T = input_ids.shape[1]\n"
            "        if state.past is not None:\n"
            "            slot = torch.arange(state.past[0][0].shape[2], device=positions.device)\n"
            "            padding = (slot[None, :] >= state.lengths[:, None])[:, None, :, None]\n"
            "            with torch.no_grad():\n"
            "                for key, value in state.past:\n"
            "                    key.masked_fill_(padding, 0.0)\n"
            "                    value.masked_fill_(padding, 0.0)\n",
        ),
    ],
)
globals().update(export_with("fragment_lm", model))
