"""In-place write into the caller's cache: it is treated as a rolling buffer of the newest S tokens.

Outputs are computed correctly first; only the caller's tensors are overwritten afterwards.
"""

import tinygpt
from gptlab_testkit.mutants import export_with, retyped_class
from tinygpt.attention import CausalSelfAttention

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "cache_immutability"


class RollingBufferAttention(CausalSelfAttention):
    def forward(self, hidden_states, past_key_value=None):
        output, (key, value) = super().forward(hidden_states, past_key_value)
        if past_key_value is not None:
            past_key, past_value = past_key_value
            S = past_key.size(2)
            past_key.copy_(key[:, :, -S:])
            past_value.copy_(value[:, :, -S:])
        return output, (key, value)


TinyGPT = retyped_class(tinygpt.TinyGPT, {CausalSelfAttention: RollingBufferAttention})
globals().update(export_with("tinygpt", TinyGPT=TinyGPT))
