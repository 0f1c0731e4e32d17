# greedy draft-and-verify, batch 1. Each model's cache covers every committed token but the last.
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class SpecResult:
    tokens: Tensor
    proposed_tokens: int
    accepted_draft_tokens: int
    discarded_draft_tokens: int
    verification_steps: int
    acceptance_rate: float


class _Cached:
    """One model's functional cache over the committed sequence."""

    def __init__(self, model, origin):
        self.model, self.origin = model, origin
        self.pkv, self.n = None, 0

    def feed(self, ids):
        dev = ids.device
        pos = torch.arange(self.n, self.n + ids.shape[1], device=dev)[None] + self.origin
        meta = {}
        if self.pkv is not None:
            meta = dict(
                past_key_values=self.pkv,
                cache_lengths=torch.tensor([self.n], device=dev),
                cache_start_positions=torch.tensor([self.origin], device=dev),
            )
        out = self.model(ids, pos, use_cache=True, **meta)
        self.pkv, self.n = out.past_key_values, self.n + ids.shape[1]
        return out.logits[0]

    def truncate(self, n):
        if n < self.n:
            self.n = n
            self.pkv = None if n == 0 else tuple((k[:, :, :n], v[:, :, :n]) for k, v in self.pkv)


def speculative_generate(
    target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id=None
):
    if input_ids.shape[0] != 1:
        raise ValueError("speculative_generate supports batch size 1")
    if num_speculative_tokens < 1:
        raise ValueError("num_speculative_tokens must be >= 1")
    with torch.inference_mode():
        seq = input_ids[0].tolist()
        P = len(seq)
        origin = int(positions[0, 0])
        dev = input_ids.device
        tgt, drf = _Cached(target, origin), _Cached(draft, origin)
        proposed = accepted = steps = 0
        ended = False

        def pending(c):
            return torch.tensor([seq[c.n :]], device=dev)

        while not ended and len(seq) - P < max_new_tokens:
            k = min(num_speculative_tokens, max_new_tokens - (len(seq) - P))
            props = []
            logits = drf.feed(pending(drf))
            while True:
                d = int(logits[-1].argmax())
                props.append(d)
                if len(props) == k or d == eos_token_id:
                    break
                logits = drf.feed(torch.tensor([[d]], device=dev))
            proposed += len(props)
            base = len(seq)
            choice = (
                tgt.feed(torch.tensor([seq[tgt.n :] + props], device=dev))[-(len(props) + 1) :]
                .argmax(-1)
                .tolist()
            )
            steps += 1
            m = 0
            while m < len(props) and props[m] == choice[m]:
                m += 1
            accepted += m
            new = props[:m]
            if m < len(props) or len(seq) - P + m < max_new_tokens:
                new = new + [choice[m]]
            if eos_token_id is not None and eos_token_id in new:
                new = new[: new.index(eos_token_id) + 1]
                ended = True
            seq.extend(new)
            tgt.truncate(base + m)
            drf.truncate(base + m)
        toks = torch.tensor([seq], dtype=torch.long, device=dev)
    return SpecResult(
        toks,
        proposed,
        accepted,
        proposed - accepted,
        steps,
        accepted / proposed if proposed else 0.0,
    )
