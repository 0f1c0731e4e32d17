"""The merge ranks candidates by (value, id) both descending, one sort over a composite key:
among equal values the larger global id wins, against the stated tie policy."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT39_MODULE"
EXPECTED_OWNER = "pt39"

pt39 = mutated_module(
    "gptlab_drills.pt39",
    [
        (
            "by_id = ids.argsort(dim=-1, stable=True)",
            "by_id = ids.argsort(dim=-1, stable=True, descending=True)",
        ),
        (
            "values, ids = shard.sort(dim=-1, descending=True, stable=True)",
            "values, ids = shard.flip(-1).sort(dim=-1, descending=True, stable=True)\n"
            "    ids = shard.shape[-1] - 1 - ids",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt39", pt39))
