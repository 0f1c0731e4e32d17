"""Each entry is copied as soon as it is checked: a bad entry later in the order is refused,
but the rows before it are already overwritten (a half-loaded module)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT09_MODULE"
EXPECTED_OWNER = "pt09"

pt09 = mutated_module(
    "gptlab_drills.pt09",
    [
        ("        for name, (fused, rows) in targets.items():\n"
         "            _check_tensor(name, pieces[name], fused[rows])\n",
         "        for name, (fused, rows) in targets.items():\n"
         "            _check_tensor(name, pieces[name], fused[rows])\n"
         "            with torch.no_grad():\n"
         "                fused[rows].copy_(pieces[name])\n"),
        ("        pieces = {name: _oriented(name, entries[name], transposed) for name in targets}\n",
         "        pieces = {name: _oriented(name, entries[name], transposed) for name in targets}\n"
         "        targets = dict(sorted(targets.items()))\n"),
    ],
)  # fmt: skip
globals().update(export_with("gptlab_drills.pt09", pt09))
