"""A call with a cache but no cache_lengths / cache_start_positions is accepted.

The missing lengths are taken from the storage and the origins as zero (a stranger's
model): right only when every row fills its storage from position 0."""

from _strangers import stranger_with

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "cache_metadata"

_module = stranger_with(
    "good_cache_aware_lm_manual_softmax",
    [
        (
            '        if lens is None or starts is None:\n            raise ValueError("cache without metadata")\n',
            "        if lens is None or starts is None:\n            S0 = past[0][0].shape[2]\n            lens = torch.full((B,), S0, dtype=torch.long, device=dev) if lens is None else lens\n            starts = torch.zeros(B, dtype=torch.long, device=dev) if starts is None else starts\n",
        ),
        (
            "            lens = cache_lengths.tolist()\n            starts = cache_start_positions.tolist()\n",
            "            S0 = past_key_values[0][0].shape[2]\n            lens = cache_lengths.tolist() if cache_lengths is not None else [S0] * B\n            starts = cache_start_positions.tolist() if cache_start_positions is not None else [0] * B\n",
        ),
    ],
)
make_test_model = _module.make_test_model
make_eos_test_model = _module.make_eos_test_model
