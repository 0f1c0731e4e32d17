"""At the first mismatch the rejected draft token is committed instead of the target's token."""

import torch

from speculative import generate as reference

VARIABLE = "SPECULATIVE_DECODING_MODULE"
EXPECTED_OWNER = "speculative_rollback"

__all__ = ["speculative_generate"]


class DraftReplacementPolicy(reference.GreedyPolicy):
    def verify(self, target_logits, proposals):
        choices = target_logits.argmax(dim=-1).tolist()
        for index, proposal in enumerate(proposals):
            if choices[index] != proposal.token:
                return index, proposal.token  # mistake: should be choices[index]
        return len(proposals), None


def speculative_generate(
    target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id=None
):
    with torch.no_grad():
        return reference._draft_and_verify(
            target,
            draft,
            input_ids,
            positions,
            max_new_tokens,
            num_speculative_tokens,
            eos_token_id,
            DraftReplacementPolicy(),
        )
