"""IntermediateTensors keeps its tensors under another attribute name (`named`)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_interface"
CLAUSE = "M04.1"

held = mutated_module(
    "runtime_lm.intermediate",
    [
        ("    tensors: dict[str, Tensor]\n", "    named: dict[str, Tensor]\n"),
        ("return self.tensors[key]", "return self.named[key]"),
    ],
)
model = mutated_module("runtime_lm.model", rebind={"IntermediateTensors": held.IntermediateTensors})
globals().update(export_with("runtime_lm", held, model))
