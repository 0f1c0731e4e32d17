"""Every request samples from one generator seeded with the first request's seed.

A request's draws then depend on what else shares its batches (a stranger's engine)."""

from _strangers import stranger_with

VARIABLE = "SCHEDULER_MODULE"
EXPECTED_OWNER = "mixed_batch"

_module = stranger_with(
    "good_scheduler_heap_paged",
    [
        (
            "        self.generator = torch.Generator().manual_seed(seed)\n",
            "        self.generator = _SHARED.setdefault('g', torch.Generator().manual_seed(seed))\n",
        ),
        (
            "class _Request:\n",
            "_SHARED = {}\n\n\nclass _Request:\n",
        ),
    ],
)
Engine = _module.Engine
