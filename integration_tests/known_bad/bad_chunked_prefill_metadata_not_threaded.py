"""Each chunk gets the previous chunk's K/V but the caller's original lengths and starts."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CHUNKED_PREFILL_MODULE"
EXPECTED_OWNER = "chunked_metadata"

# mistake: lengths and starts are never advanced to the returned ones
kv_only = ("past, lengths, starts = returned", "past = returned[0]")
globals().update(
    export_with("chunked_prefill", mutated_module("chunked_prefill.prefill", [kv_only]))
)
