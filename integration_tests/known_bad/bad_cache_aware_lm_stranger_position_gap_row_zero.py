"""The position-gap check looks at the first row only (a stranger's model)."""

from _strangers import stranger_with

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "cache_metadata"

_module = stranger_with(
    "good_cache_aware_lm_manual_softmax",
    [
        (
            "        if (pos[:, 0] != starts + lens).any():",
            "        if pos[0, 0] != starts[0] + lens[0]:  # row 0 only",
        ),
    ],
)
make_test_model = _module.make_test_model
make_eos_test_model = _module.make_eos_test_model
