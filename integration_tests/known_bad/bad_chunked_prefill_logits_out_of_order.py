"""Chunk logits are concatenated last chunk first, not in prompt order."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CHUNKED_PREFILL_MODULE"
EXPECTED_OWNER = "chunked_metadata"

# mistake: the per-chunk logits list was built by prepending (or iterated reversed)
reversed_chunks = ("torch.cat(chunk_logits, dim=1)", "torch.cat(chunk_logits[::-1], dim=1)")
globals().update(
    export_with("chunked_prefill", mutated_module("chunked_prefill.prefill", [reversed_chunks]))
)
