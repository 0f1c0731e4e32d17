"""Routes are grouped by local expert first and rank second (every rank's expert 0, then
every rank's expert 1, ...): each rank's routes are scattered over the dispatch, so the
blocks send_offsets point at hold other ranks' routes."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT40_MODULE"
EXPECTED_OWNER = "pt40"

pt40 = mutated_module(
    "gptlab_drills.pt40",
    [
        (
            "    order = experts.argsort(stable=True)  # by expert id = by (rank, local expert)",
            "    key = (experts % experts_per_rank) * ranks + experts // experts_per_rank\n"
            "    order = key.argsort(stable=True)",
        ),
        ("    ranked = experts[order]", "    ranked = key[order]"),
    ],
)
globals().update(export_with("gptlab_drills.pt40", pt40))
