"""Caller's tensors returned aliased: the cache grows by rebinding past_key.data and returns it."""

import tinygpt
from gptlab_testkit.mutants import export_with, retyped_class
from tinygpt.attention import CausalSelfAttention

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "cache_immutability"


class GrowInPlaceAttention(CausalSelfAttention):
    def forward(self, hidden_states, past_key_value=None):
        output, (key, value) = super().forward(hidden_states, past_key_value)
        if past_key_value is None:
            return output, (key, value)
        past_key, past_value = past_key_value
        past_key.data = key  # the caller's tensor objects now hold the grown cache
        past_value.data = value
        return output, (past_key, past_value)


TinyGPT = retyped_class(tinygpt.TinyGPT, {CausalSelfAttention: GrowInPlaceAttention})
globals().update(export_with("tinygpt", TinyGPT=TinyGPT))
