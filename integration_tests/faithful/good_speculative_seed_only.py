"""A stranger's speculative decoding doing exactly the contract's work: no checks.

Written from the contract page alone. Each model keeps a cache of the first n committed
tokens and is fed whatever committed tokens it has not seen, so a rollback is a slice of
that cache back to the accepted prefix. The target's first verification call also carries
the prompt. No validation beyond what the page names (none).
"""

VARIABLE = "SPECULATIVE_DECODING_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass

import torch


class CachedModel:
    """A cache-aware model plus a cache of the first `seen` tokens of a sequence at `origin`."""

    def __init__(self, model, origin, device):
        self.model, self.origin, self.device = model, origin, device
        self.past, self.seen = None, 0

    def feed(self, tokens):
        """Run `tokens` (the sequence's next ones) and return their logits `[len(tokens), V]`."""
        ids = torch.tensor([tokens], device=self.device)
        pos = torch.arange(len(tokens), device=self.device)[None] + self.origin + self.seen
        cache = {}
        if self.past is not None:
            cache = dict(
                past_key_values=self.past,
                cache_lengths=torch.tensor([self.seen], device=self.device),
                cache_start_positions=torch.tensor([self.origin], device=self.device),
            )
        with torch.no_grad():
            out = self.model(ids, pos, use_cache=True, **cache)
        self.past, self.seen = out.past_key_values, self.seen + len(tokens)
        return out.logits[0]

    def keep(self, count):
        """Forget every cached token after the first `count`."""
        if count < self.seen:
            self.past = tuple((k[:, :, :count], v[:, :, :count]) for k, v in self.past)
            self.seen = count


@dataclass
class SpeculativeOutput:
    tokens: torch.Tensor
    proposed_tokens: int
    accepted_draft_tokens: int
    discarded_draft_tokens: int
    verification_steps: int

    @property
    def acceptance_rate(self):
        return self.accepted_draft_tokens / self.proposed_tokens if self.proposed_tokens else 0.0


def speculative_generate(
    target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id=None
):
    sequence = input_ids[0].tolist()
    prompt_length = len(sequence)
    origin, device = int(positions[0, 0]), input_ids.device
    judge, guesser = CachedModel(target, origin, device), CachedModel(draft, origin, device)
    proposed = accepted = steps = 0
    finished = False
    while not finished and len(sequence) - prompt_length < max_new_tokens:
        left = max_new_tokens - (len(sequence) - prompt_length)
        guesses = []
        while len(guesses) < min(num_speculative_tokens, left):
            if guesses and guesses[-1] == eos_token_id:
                break
            unseen = (sequence + guesses)[guesser.seen :]
            guesses.append(int(guesser.feed(unseen)[-1].argmax()))
        committed = len(sequence)
        choices = (
            judge.feed((sequence + guesses)[judge.seen :])[-len(guesses) - 1 :].argmax(-1).tolist()
        )
        steps += 1
        proposed += len(guesses)
        agree = 0
        while agree < len(guesses) and guesses[agree] == choices[agree]:
            agree += 1
        accepted += agree
        sequence += guesses[:agree]
        if agree < len(guesses):
            sequence.append(choices[agree])
        elif len(sequence) - prompt_length < max_new_tokens and eos_token_id not in guesses:
            sequence.append(choices[agree])
        judge.keep(committed + agree)
        guesser.keep(committed + agree)
        finished = eos_token_id is not None and eos_token_id in sequence[committed:]
    tokens = torch.tensor([sequence], dtype=input_ids.dtype, device=device)
    return SpeculativeOutput(tokens, proposed, accepted, proposed - accepted, steps)
