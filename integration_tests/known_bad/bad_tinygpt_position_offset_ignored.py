"""Position offset ignored after a cache: new tokens always embed positions 0..T-1."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "tokenwise_cache"

from_zero = ("torch.arange(past_length, past_length + T,", "torch.arange(0, T,")
globals().update(
    export_with("tinygpt", mutated_module("tinygpt.model", [from_zero], within="TinyGPT.embed"))
)
