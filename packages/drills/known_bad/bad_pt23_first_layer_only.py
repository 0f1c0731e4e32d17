"""Only the first layer follows the parents; the deeper layers are returned as they were."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT23_MODULE"
EXPECTED_OWNER = "pt23"

pt23 = mutated_module(
    "gptlab_drills.pt23",
    [
        (
            "    return [tuple(t.index_select(0, rows) for t in layer) for layer in caches]",
            "    moved = [tuple(t.index_select(0, rows) for t in layer) for layer in caches[:1]]\n"
            "    return moved + [tuple(layer) for layer in caches[1:]]",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt23", pt23))
