"""generate checks no context bound of its own (a stranger's model).

It decodes until the model's forward rejects a position past the context: the
ValueError comes after work was done."""

from _strangers import stranger_with

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "eos_context"

_module = stranger_with(
    "good_cache_aware_lm_manual_softmax",
    [
        (
            '        if int(positions[:, -1].max()) + max_new_tokens >= self.ctx:\n            raise ValueError("context length")\n',
            "",
        ),
    ],
)
make_test_model = _module.make_test_model
make_eos_test_model = _module.make_eos_test_model
