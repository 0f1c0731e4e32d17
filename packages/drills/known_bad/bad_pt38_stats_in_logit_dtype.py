"""The max and exp-sum are kept in the logits' own dtype: exact for fp32 logits, but a bf16
exp-sum over a vocabulary rounds away the answer, and the statistics come back bf16."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT38_MODULE"
EXPECTED_OWNER = "pt38"

pt38 = mutated_module(
    "gptlab_drills.pt38",
    [
        (
            "    return torch.float64 if shard.dtype == torch.float64 else torch.float32",
            "    return shard.dtype",
        ),
        (
            "    return logprobs if valid is None",
            "    logprobs = logprobs.float()\n    return logprobs if valid is None",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt38", pt38))
