"""The repair ties the storage (`head.weight.data = embedding.weight.data`) but keeps two
Parameter objects: the matrix is counted twice and each use gets half the gradient."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT08_MODULE"
EXPECTED_OWNER = "pt08"

pt08 = mutated_module(
    "gptlab_drills.pt08",
    [
        ("        self.head.weight = self.embedding.weight\n\n",
         "        self.head.weight.data = self.embedding.weight.data\n\n"),
    ],
)  # fmt: skip
globals().update(export_with("gptlab_drills.pt08", pt08))
