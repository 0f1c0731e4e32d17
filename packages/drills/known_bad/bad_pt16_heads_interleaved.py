"""Query head h reads K/V head h % Hkv (as a repeat of the whole K/V would pair them),
instead of h // G: right only when Hq == Hkv."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT16_MODULE"
EXPECTED_OWNER = "pt16"

pt16 = mutated_module(
    "gptlab_drills.pt16",
    [
        (
            "    grouped = q.to(work).reshape(B, Hkv, Hq // Hkv, D)",
            "    grouped = q.to(work).reshape(B, Hq // Hkv, Hkv, D).transpose(1, 2)",
        ),
        (
            "    return out.reshape(B, Hq, D).to(q.dtype)",
            "    return out.transpose(1, 2).reshape(B, Hq, D).to(q.dtype)",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt16", pt16))
