"""The bonus token is appended after every fully accepted round, even with no budget left."""

import types

import torch

from speculative import generate as reference

VARIABLE = "SPECULATIVE_DECODING_MODULE"
EXPECTED_OWNER = "speculative_accounting"

__all__ = ["speculative_generate"]


def _bonus_allowed(remaining, accepted, proposals, eos_token_id):
    return eos_token_id not in proposals  # mistake: the remaining budget is never checked


_loop = types.FunctionType(
    reference._draft_and_verify.__code__, {**vars(reference), "_bonus_allowed": _bonus_allowed}
)


def speculative_generate(
    target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id=None
):
    with torch.no_grad():
        return _loop(
            target,
            draft,
            input_ids,
            positions,
            max_new_tokens,
            num_speculative_tokens,
            eos_token_id,
            reference.GreedyPolicy(),
        )
