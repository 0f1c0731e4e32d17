"""Sampling draws from one generator shared by the engine, not from the request's own.

A request's k-th draw then depends on how many draws other requests made before it:
its seeded output changes with whatever shares its batches.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "mixed_batch"

sampling = mutated_module(
    "scheduler.sampling",
    [
        ("def next_token(", "_SHARED = torch.Generator().manual_seed(0)\n\n\ndef next_token("),
        ("generator=request.generator))", "generator=_SHARED))"),
    ],
)
engine = mutated_module("scheduler.engine", rebind={"next_token": sampling.next_token})
globals().update(export_with("scheduler", engine))
