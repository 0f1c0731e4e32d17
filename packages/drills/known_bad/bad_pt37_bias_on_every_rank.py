"""Every rank adds the bias to its partial before the sum, as a column split would: the
all-reduce then counts it R times (right only at world size 1)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT37_MODULE"
EXPECTED_OWNER = "pt37"

pt37 = mutated_module(
    "gptlab_drills.pt37",
    [
        ("partials = [F.linear(xs, ws) for", "partials = [F.linear(xs, ws, bias) for"),
        ("return reduced if bias is None else reduced + bias", "return reduced"),
    ],
)
globals().update(export_with("gptlab_drills.pt37", pt37))
