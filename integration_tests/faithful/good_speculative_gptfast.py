"""Faithful alternative: caches cover all but the last committed token (gpt-fast style)."""

VARIABLE = "SPECULATIVE_DECODING_MODULE"  # graded through this variable by `nox -s known_bad`

from types import SimpleNamespace

import torch


class Runner:
    def __init__(self, model, origin):
        self.model, self.origin, self.n = model, origin, 0
        self.cache = {}

    def run(self, tokens):  # feeds tokens at positions origin+n..., returns logits [T, V]
        ids = torch.tensor([tokens])
        pos = self.origin + self.n + torch.arange(len(tokens))[None]
        out = self.model(ids, pos, use_cache=True, **self.cache)
        self.cache = dict(
            past_key_values=out.past_key_values,
            cache_lengths=out.cache_lengths,
            cache_start_positions=out.cache_start_positions,
        )
        self.n += len(tokens)
        return out.logits[0]

    def truncate(self, n):
        if n == 0:
            self.cache, self.n = {}, 0
            return
        c = self.cache
        self.cache = dict(
            past_key_values=tuple((k[:, :, :n], v[:, :, :n]) for k, v in c["past_key_values"]),
            cache_lengths=torch.tensor([n]),
            cache_start_positions=c["cache_start_positions"],
        )
        self.n = n


@torch.no_grad()
def speculative_generate(
    target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id=None
):
    seq = input_ids[0].tolist()
    T0 = len(seq)
    origin = int(positions[0, 0])
    tgt, drf = Runner(target, origin), Runner(draft, origin)
    if len(seq) > 1:
        tgt.run(seq[:-1])
        drf.run(seq[:-1])
    stats = dict(proposed=0, accepted=0, steps=0)
    while len(seq) - T0 < max_new_tokens:
        budget = max_new_tokens - (len(seq) - T0)
        k = min(num_speculative_tokens, budget)
        drf.truncate(min(drf.n, len(seq) - 1))
        feed = seq[drf.n :]
        props = []
        for _ in range(k):
            tok = int(drf.run(feed)[-1].argmax())
            props.append(tok)
            feed = [tok]
            if tok == eos_token_id:
                break
        verdict = tgt.run(seq[tgt.n :] + props).argmax(-1).tolist()[-(len(props) + 1) :]
        stats["steps"] += 1
        stats["proposed"] += len(props)
        m = 0
        while m < len(props) and props[m] == verdict[m]:
            m += 1
        stats["accepted"] += m
        new = props[:m]
        if m < len(props) or (m < budget and eos_token_id not in props):
            new = new + [verdict[m]]
        seq += new
        tgt.truncate(len(seq) - 1)
        drf.truncate(min(drf.n, len(seq) - 1))
        if eos_token_id is not None and eos_token_id in new:
            break
    p, a = stats["proposed"], stats["accepted"]
    return SimpleNamespace(
        tokens=torch.tensor([seq], dtype=input_ids.dtype),
        proposed_tokens=p,
        accepted_draft_tokens=a,
        discarded_draft_tokens=p - a,
        verification_steps=stats["steps"],
        acceptance_rate=a / p if p else 0.0,
    )
