"""Partial attempts: for a mechanism and a stage, the attempt a learner has after building
exactly what that stage's and the earlier stages' `build` texts say, and nothing later.

Each is a faithful candidate (integration_tests/faithful) with what later stages' texts
build taken out, read literally, in the learner's terms: a graded method a later stage adds
raises NotImplementedError (paged_kv's block tables before stage 2); a function or a `step`
that grows across stages refuses, with NotImplementedError, the inputs a later stage teaches
it (a cached call before the cache stage, per-row lengths before the per-row stage, a given
cache before continuation, a tied head before modern_lm's stage 2), a result field a later
stage adds raises when read (speculative's verification steps and acceptance rate), and a
behaviour a later stage adds is left out (validation and the free-block budget before the
validation stage, preemption, block accounting and prefix-cache reuse before the scheduler's
stage 2, reuse at admission, cached blocks and copy on write before paged_kv's stages 3, 4
and 5, the budget cap and EOS rule of speculative accounting, modern_lm's initialisation).
Loaded by conftest.py (the `partial_attempt` fixture): tests import it from there.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FAITHFUL = ROOT / "integration_tests" / "faithful"
CANDIDATES = {
    "tinygpt": "good_tinygpt_manual_softmax.py",
    "cache_aware_lm": "good_cache_aware_lm_manual_softmax.py",
    "cache_aware_modern": "good_cache_aware_modern_over_modern_lm.py",
    "kv_cache": "good_kv_cache_index_copy.py",
    "prefix_cache": "good_prefix_cache_dict_recency.py",
    "chunked_prefill": "good_chunked_prefill_balanced.py",
    "speculative": "good_speculative_gptfast.py",
    "paged_kv": "good_paged_kv_tuple_chain.py",
    "scheduler": "good_scheduler_flat_slots.py",
    "modern_lm": "good_modern_lm_fused_gate_up.py",
    "moe_lm": "good_moe_lm_argmax_onehot.py",
    "runtime_lm": "good_runtime_lm_over_modern_lm.py",
    "fragment_lm": "good_fragment_lm_over_moe_lm.py",
}
# {mechanism: {stage that builds it: the graded methods it adds}}; before that stage each
# raises NotImplementedError.
LATER = {
    "cache_aware_lm": {6: ["Faithful.generate"]},
    "cache_aware_modern": {6: ["CachedModernLM.generate"]},
    "kv_cache": {
        2: [
            "KVCache.__init__",
            "KVCache.append",
            "KVCache.storage",
            "KVCache.cache_lengths",
            "KVCache.cache_start_positions",
            "KVCache.logical_length",
        ],
        3: ["KVCache.load", "KVCache.model_inputs", "KVCache.snapshot", "KVCache.reset"],
        4: ["KVCache.from_past_key_values"],
    },
    "prefix_cache": {2: ["PrefixCache.clear"], 3: ["PrefixCachedRunner.prefill"]},
    # fork is the allocator's (stage 1); block tables, the slot formula and model_inputs
    # reading them back are stage 2's
    "paged_kv": {
        2: ["PagedKVCache.block_table", "PagedKVCache.slot_mapping", "PagedKVCache.model_inputs"]
    },
    "scheduler": {3: ["Engine._preempt"]},
    "moe_lm": {2: ["MoECausalLM.__init__"]},  # the LM around the block is stage 2's
}
# paged_kv: the allocator (stage 1) keeps its tables to itself and raises RuntimeError when
# no block is left; reading the tables (block_table, slot_mapping, model_inputs) is stage 2;
# hashes, publishing full blocks and reuse at admission stage 3; freed blocks that stay
# cached (LRU) and the hit, miss and eviction counters stage 4; copy on write stage 5; every
# argument check and the free-block budget before the first write stage 7 (before, a check
# does not refuse and an unknown id is the dict's KeyError).
PAGED_KV_BEFORE = [
    (
        7,
        'raise ValueError(f"request_id {rid!r}: no such open request") from None',
        "raise KeyError(rid) from None",
    ),
    (7, "raise ValueError(", "_unchecked("),
    (7, '            raise RuntimeError(f"out of blocks', '            _unchecked(f"out of blocks'),
    (
        7,
        "\n\nclass PagedKVCache:",
        "\n\ndef _unchecked(message):\n    pass\n\n\nclass PagedKVCache:",
    ),
    (
        7,
        "    def _grab(self):\n",
        "    def _grab(self):\n"
        "        if not self.free_list and not self.last_used:\n"
        "            raise RuntimeError('no block left')\n",
    ),
    (5, "            if len(s.toks) % B and self.refs[s.table[-1]] > 1:", "            if False:"),
    (
        4,
        "        self.n_hits += len(s.table)\n        self.n_miss += eligible - len(s.table)\n",
        "",
    ),
    (
        4,
        "            if b in self.key_of:\n"
        "                self.tick += 1\n"
        "                self.last_used[b] = self.tick\n",
        "            if b in self.key_of:\n"
        "                del self.by_key[self.key_of.pop(b)]\n"
        "                self.free_list.append(b)\n",
    ),
    (3, "        for i in range(eligible):", "        for i in range(0):"),
    (3, "            while len(s.keys) < len(s.toks) // B:", "            while False:"),
]
# {mechanism: [(stage that builds it, text of the faithful file, what a learner has before)]}
BEFORE = {
    # fragment_lm before stage 2: no cache comes back (the forward is the uncached one)
    "fragment_lm": [
        (
            2,
            "cache = (tuple(present), lengths + T, starts.clone()) if use_cache else None",
            "cache = None",
        )
    ],
    # runtime_lm before stage 2: one stage holding every layer, and a loader that packs what
    # it is given without refusing anything
    "runtime_lm": [
        (
            2,
            "        self.is_first, self.is_last = r == 0, r == P - 1\n"
            "        self.mine = range(r * L // P, (r + 1) * L // P)\n",
            "        self.is_first, self.is_last = True, True\n        self.mine = range(L)\n",
        ),
        (
            2,
            "        for name in names:\n"
            "            if name not in table:\n"
            '                raise ValueError(f"unexpected weight {name}")\n'
            "        for name in set(names):\n"
            "            if names.count(name) > 1:\n"
            '                raise ValueError(f"duplicate weight {name}")\n'
            "        for name, tensor in items:\n"
            "            if tuple(tensor.shape) != table[name][0]:\n"
            '                raise ValueError(f"misshaped weight {name}: {tuple(tensor.shape)}")\n',
            "",
        ),
        (
            2,
            "        if needed - set(names):\n"
            '            raise ValueError(f"missing weights {sorted(needed - set(names))}")\n',
            "",
        ),
    ],
    # tinygpt before stage 5: positions restart at 0 and the mask is an upper-left triangle.
    "tinygpt": [
        (
            5,
            "torch.arange(P, P + T, device=input_ids.device)",
            "torch.arange(0, T, device=input_ids.device)",
        ),
        (
            5,
            "torch.ones(T, P + T, dtype=torch.bool, device=x.device).triu(P + 1)",
            "torch.ones(T, P + T, dtype=torch.bool, device=x.device).triu(1)",
        ),
    ],
    # validation is stage 5's build (M03's advanced branch too)
    "cache_aware_modern": [
        (
            5,
            "        check_call(past, lengths, starts, positions, config.num_hidden_layers, K, D,\n"
            "                   self.lm_head.weight)  # fmt: skip\n",
            "",
        )
    ],
    "cache_aware_lm": [
        (
            5,
            "        self._check(input_ids, positions, past_key_values, cache_lengths,"
            " cache_start_positions)\n",
            "",
        )
    ],
    # stage 1 looks up the one aligned prefix by its exact key and evicts nothing; the
    # downward search and the LRU are stage 2's
    "prefix_cache": [
        (2, "            n -= self.block_size\n", "            break\n"),
        (2, "        while len(self.table) > self.max_entries:\n", "        while False:\n"),
    ],
    # stage 1 prefills from nothing; continuing a given cache is stage 2
    "chunked_prefill": [
        (
            2,
            "    T = input_ids.shape[1]\n",
            "    if past_key_values is not None:\n"
            "        raise NotImplementedError('continuing a given cache is stage 2')\n"
            "    T = input_ids.shape[1]\n",
        )
    ],
    # one round before the accounting stage: every round proposes k tokens and commits the
    # target's bonus token, EOS is an ordinary token, and the output is cut to the budget
    "speculative": [
        (2, "k = min(num_speculative_tokens, budget)", "k = num_speculative_tokens"),
        (2, "            if tok == eos_token_id:\n", "            if False:\n"),
        (
            2,
            "        if m < len(props) or (m < budget and eos_token_id not in props):\n",
            "        if True:\n",
        ),
        (
            2,
            "        if eos_token_id is not None and eos_token_id in new:\n",
            "        if False:\n",
        ),
        (2, "    p, a = stats[", "    seq = seq[: T0 + max_new_tokens]\n    p, a = stats["),
        (2, "    return SimpleNamespace(\n", "    return _RoundCounts(\n"),
    ],
    # the forward to logits under Llama's checkpoint names is stage 1's (the layer's tests load
    # weights by those names and call it); the loss, the tied head and the initialisation
    # stage 2's
    "modern_lm": [
        (
            2,
            "        if labels is not None:\n",
            "        if labels is not None and STAGE < 2:\n"
            "            raise NotImplementedError('the loss is stage 2')\n"
            "        if labels is not None:\n",
        ),
        (
            2,
            "        if config.tie_word_embeddings:\n",
            "        if config.tie_word_embeddings and STAGE < 2:\n"
            "            raise NotImplementedError('the tied head is stage 2')\n"
            "        if config.tie_word_embeddings:\n",
        ),
        (2, "module.weight.data.normal_(0.0, 0.02)", "pass"),
    ],
    # prefix-cache reuse is stage 2's build (no hit at admission, nothing published on
    # release); preemption stage 3's; validation stage 5's
    "scheduler": [
        (2, "    def _hits(self, tokens):\n", "    def _hits(self, tokens):\n        return []\n"),
        (
            2,
            "    def drop(self, block, key):\n",
            "    def drop(self, block, key):\n        key = None\n",
        ),
        (2, "                self._release(req)\n", ""),
        (2, "            if self.pool.available() - idle_hits < 1:\n", "            if False:\n"),
    ],
    "paged_kv": PAGED_KV_BEFORE,
}
TINYGPT_LATER = """

_forward, _generate = TinyGPT.forward, TinyGPT.generate


def forward(self, input_ids, labels=None, past_key_values=None, use_cache=False):
    if STAGE < 2:
        raise NotImplementedError("the forward pass is stage 2")
    if labels is not None and STAGE < 3:
        raise NotImplementedError("the loss is stage 3")
    if (past_key_values is not None or use_cache) and STAGE < 4:
        raise NotImplementedError("the cache is stage 4")
    return _forward(self, input_ids, labels, past_key_values, use_cache)


def generate(self, *args, **kwargs):
    if STAGE < 6:
        raise NotImplementedError("generation is stage 6")
    return _generate(self, *args, **kwargs)


TinyGPT.forward, TinyGPT.generate = forward, generate
"""
CACHE_AWARE_LATER = """

_forward = Faithful.forward


def forward(self, input_ids, positions, past_key_values=None, cache_lengths=None,
            cache_start_positions=None, use_cache=False):
    if past_key_values is not None and STAGE < 2:
        raise NotImplementedError("the cached call is stage 2")
    if past_key_values is not None and STAGE < 3 and len(set(cache_lengths.tolist())) > 1:
        raise NotImplementedError("per-row cache lengths are stage 3")
    return _forward(self, input_ids, positions, past_key_values, cache_lengths,
                    cache_start_positions, use_cache)


Faithful.forward = forward
"""
SCHEDULER_LATER = """

_check = Engine._check


def _unchecked(self, prompt_ids, max_new_tokens, eos_token_id, temperature, seed, name):
    if STAGE >= 5:
        return _check(self, prompt_ids, max_new_tokens, eos_token_id, temperature, seed, name)
    if isinstance(prompt_ids, torch.Tensor):
        return [int(t) for t in prompt_ids.reshape(-1).tolist()]
    return list(prompt_ids)


Engine._check = _unchecked
"""
SPECULATIVE_LATER = """

class _RoundCounts(SimpleNamespace):
    \"\"\"The result before stage 2: the verification steps and the acceptance rate are
    stage 2's (reading them raises).\"\"\"

    @property
    def verification_steps(self):
        raise NotImplementedError("verification_steps is stage 2")

    @property
    def acceptance_rate(self):
        raise NotImplementedError("acceptance_rate is stage 2")
"""
AFTER = {
    "tinygpt": TINYGPT_LATER,
    "cache_aware_lm": CACHE_AWARE_LATER,
    "scheduler": SCHEDULER_LATER,
    "speculative": SPECULATIVE_LATER,
}


def stub(dotted: str) -> str:
    cls, name = dotted.split(".")
    return (
        f"\n\ndef _later(*args, **kwargs):\n    raise NotImplementedError({dotted!r})\n\n\n"
        f"{cls}.{name} = property(_later) if isinstance({cls}.__dict__.get({name!r}), property)"
        f" else _later\n"
    )


def partial(name: str, stage: int) -> str:
    """The attempt text for `name` after stage `stage` (the last stage: the whole candidate)."""
    text = (FAITHFUL / CANDIDATES[name]).read_text()
    for builds, old, new in BEFORE.get(name, []):
        if stage < builds:
            assert old in text, f"{name}: {old!r} is not in {CANDIDATES[name]}"
            text = text.replace(old, new)
    text += f"\nSTAGE = {stage}\n" + AFTER.get(name, "")
    for builds, methods in LATER.get(name, {}).items():
        if stage < builds:
            text += "".join(stub(m) for m in methods)
    return text
