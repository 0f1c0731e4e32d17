"""The repair registers a ModuleList but forward still walks a plain list copied at
construction, so a layer appended or replaced through the container never runs."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT06_MODULE"
EXPECTED_OWNER = "pt06"

pt06 = mutated_module(
    "gptlab_drills.pt06",
    [
        (
            "        self.final_norm = nn.LayerNorm(d_model)",
            "        self.stack = list(self.layers)\n        self.final_norm = nn.LayerNorm(d_model)",
        ),
        ("        for layer in self.layers:\n", "        for layer in self.stack:\n"),
    ],
)
globals().update(export_with("gptlab_drills.pt06", pt06))
