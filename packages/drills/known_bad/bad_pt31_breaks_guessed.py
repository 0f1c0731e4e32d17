"""The breaks were guessed from the start's source, not read from dynamo: the list append
is named as a break and the print is missing (explain was run without a finished row)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT31_MODULE"
EXPECTED_OWNER = "pt31"

pt31 = mutated_module(
    "gptlab_drills.pt31",
    [
        (
            '        (\'print("step", len(history), "tokens", tokens)\', "print"),\n',
            '        ("history.append(tokens)", "list append"),\n',
        )
    ],
)
globals().update(export_with("gptlab_drills.pt31", pt31))
