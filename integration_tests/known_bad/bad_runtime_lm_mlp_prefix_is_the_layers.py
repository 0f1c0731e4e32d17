"""The MLP is given its layer's prefix, not its own path: two modules share a name."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "RUNTIME_LM_MODULE"
EXPECTED_OWNER = "runtime_interface"
CLAUSE = "M04.2"

layers = mutated_module(
    "runtime_lm.layers",
    [
        (
            'self.mlp = RuntimeMLP(config, join(prefix, "mlp"))',
            "self.mlp = RuntimeMLP(config, prefix)",
        )
    ],
)
model = mutated_module(
    "runtime_lm.model", rebind={"RuntimeDecoderLayer": layers.RuntimeDecoderLayer}
)
globals().update(export_with("runtime_lm", model))
