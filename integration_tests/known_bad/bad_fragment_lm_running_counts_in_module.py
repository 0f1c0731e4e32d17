"""The model keeps a running total of routed tokens, made on its first call: made under
torch.inference_mode() it is an inference tensor, and the next call outside fails."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_inference"
CLAUSE = "M10.10"

model = mutated_module(
    "fragment_lm.model",
    [
        ("from torch import Tensor, nn\n", "import torch\nfrom torch import Tensor, nn\n"),
        (
            "        logits: Tensor = self.lm_head(self.model.norm(x))\n",
            "        logits: Tensor = self.lm_head(self.model.norm(x))\n"
            "        routed = torch.stack(counts).sum(dim=0)\n"
            "        if getattr(self, 'routed_tokens', None) is None:\n"
            "            self.routed_tokens = torch.zeros_like(routed)\n"
            "        self.routed_tokens += routed\n",
        ),
    ],
)
globals().update(export_with("fragment_lm", model))
