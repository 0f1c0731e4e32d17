"""A hypothesis state machine over the allocator and the prefix cache.

Random admissions (prompts built from a few shared blocks, two origins, two
namespaces), appends (one row or two in one call, under pool pressure, so blocks
get evicted), forks and frees, plus three scenarios a paged cache gets wrong:
freed (cached) blocks re-admitted into a pool that is otherwise full, then grown
until it runs out (a held block must never be evicted); a fork whose shared
partial block is written by each side (copy on write); the same prompt under
another namespace (never shared). The run is derandomized: the same examples in
the same order on every run, so a candidate gets the same verdict every time.
After every step:

- every block is exactly one of free / in use / cached (the counts add up, and the
  blocks in use are exactly those some table holds);
- each block's reference count equals the number of tables holding it;
- no block is written while shared, and no block in use is evicted: every open
  request still reads back exactly its own K/V;
- bytes held are the held blocks' bytes, and the blocks in use never exceed what
  the open requests' tokens need (linear in tokens, never per prefix snapshot).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

pytestmark = [pytest.mark.owner("block_allocator"), pytest.mark.contract]

BLOCKS = ([1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 5])
prompts = st.builds(
    lambda blocks, tail: [token for index in blocks for token in BLOCKS[index]] + tail,
    st.lists(st.integers(0, 2), min_size=0, max_size=3),
    st.lists(st.integers(0, 3), min_size=1, max_size=3),
)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class PagedMachine(RuleBasedStateMachine):
    make_pool: type = object  # set by the test: the suite's Pool helper

    requests = Bundle("requests")

    def __init__(self) -> None:
        super().__init__()
        self.pool = self.make_pool(num_blocks=10)
        self.plans: dict[str, list[int]] = {}  # tokens each request will append next
        self.serial = 0

    # ---- rules -------------------------------------------------------------------------

    @rule(
        target=requests,
        prompt=prompts,
        start=st.sampled_from([0, 0, 1]),
        model_id=st.sampled_from(["m", "m", "n"]),
    )
    def admit(self, prompt, start, model_id):
        rid = f"r{self.serial}"
        self.serial += 1
        reused = self.pool.admit(rid, prompt, start=start, model_id=model_id)
        assert reused % 4 == 0 and reused <= 4 * ((len(prompt) - 1) // 4)
        self.plans[rid] = prompt[reused:]
        return rid

    @rule(rid=requests, count=st.integers(1, 6), filler=st.integers(0, 3))
    def append(self, rid, count, filler):
        if rid not in self.plans:
            return
        self._append({rid: self._next_tokens(rid, count, filler)})

    @rule(first=requests, second=requests, count=st.integers(1, 3))
    def append_two_rows(self, first, second, count):
        if first == second or first not in self.plans or second not in self.plans:
            return
        self._append({rid: self._next_tokens(rid, count, 1) for rid in (first, second)})

    @rule(target=requests, parent=requests)
    def fork(self, parent):
        if parent not in self.plans:
            return multiple()
        child = f"r{self.serial}"
        self.serial += 1
        self.pool.fork(parent, child)
        self.plans[child] = [9, 9, 9]  # a child diverges from its parent
        return child

    @rule(rid=consumes(requests))
    def free(self, rid):
        if rid in self.plans:
            self.pool.free(rid)
            del self.plans[rid]

    @precondition(
        lambda self: self.pool.cache.stats.free_blocks + self.pool.cache.stats.cached_blocks >= 2
    )
    @rule(blocks=st.integers(1, 2), seed=st.integers(0, 10**6))
    def pressure(self, blocks, seed):
        """A burst of fresh tokens that may evict cached blocks, then let go of them."""
        rid = f"burst{self.serial}"
        self.serial += 1
        self.pool.fill(rid, blocks=blocks, seed=seed)
        self.pool.free(rid)

    # ---- scenarios ---------------------------------------------------------------------

    @precondition(lambda self: self._available() >= 3)
    @rule(first=st.integers(0, 2), second=st.integers(0, 2), model_id=st.sampled_from("mn"))
    def readmit_cached_blocks_into_a_full_pool(self, first, second, model_id):
        """Publish two blocks, free them (cached), hold every free block, re-admit, grow."""
        prompt = BLOCKS[first] + BLOCKS[second] + [7]
        owner, again, hog = self._fresh_id(), self._fresh_id(), self._fresh_id()
        self.pool.admit(owner, prompt[:1], model_id=model_id)
        self.pool.append({owner: prompt})
        self.pool.free(owner)
        free = self.pool.cache.stats.free_blocks
        if free:
            self.pool.fill(hog, blocks=free, seed=self.serial)
        assert self.pool.cache.stats.free_blocks == 0
        reused = self.pool.admit(again, prompt, model_id=model_id)
        assert reused == 8, "the two cached blocks are reused"
        self.plans[again] = []
        # Grow until the pool runs out: only other cached blocks may be evicted.
        for _ in range(6):
            if not self._append({again: [3, 1, 4, 1]}):
                break
            self.pool.assert_stored(again)
        self.pool.assert_stored(again)
        if free:
            self.pool.free(hog)
        self.pool.free(again)
        del self.plans[again]

    @rule(rid=requests)
    def fork_and_write_the_shared_partial_block(self, rid):
        """Both sides of a fork write into the block they share: each keeps its own."""
        cache = self.pool.cache
        if rid not in self.plans or cache.cache_length(rid) % 4 == 0 or self._available() < 2:
            return
        child = self._fresh_id()
        self.pool.fork(rid, child)
        self.plans[child] = []
        self._append({child: [11]})
        self._append({rid: self._next_tokens(rid, 1, 2)})
        self.pool.assert_stored(rid, child)
        self.pool.free(child)
        del self.plans[child]

    @precondition(lambda self: self._available() >= 3)
    @rule(blocks=st.integers(0, 2), other_model=st.booleans())
    def same_prompt_under_another_namespace(self, blocks, other_model):
        """A prompt published under one namespace is never reused under another."""
        prompt = BLOCKS[blocks] + BLOCKS[(blocks + 1) % 3] + [5]
        first, second = self._fresh_id(), self._fresh_id()
        self.pool.admit(first, prompt[:1])
        self.pool.append({first: prompt})
        other = {"model_id": f"m{self.serial}"} if other_model else {"cache_id": f"c{self.serial}"}
        reused = self.pool.admit(second, prompt, **other)
        assert reused == 0, f"blocks of namespace (m, c) reused under {other}"
        self.pool.free(second)
        self.pool.free(first)

    # ---- helpers -----------------------------------------------------------------------

    def _fresh_id(self) -> str:
        self.serial += 1
        return f"s{self.serial}"

    def _available(self) -> int:
        stats = self.pool.cache.stats
        return stats.free_blocks + stats.cached_blocks

    def _next_tokens(self, rid: str, count: int, filler: int) -> list[int]:
        plan = self.plans[rid]
        tokens = plan[:count] + [filler] * max(0, count - len(plan))
        return tokens

    def _blocks_needed(self, rows: dict[str, list[int]]) -> int:
        cache, needed, copies = self.pool.cache, 0, {}
        for rid, tokens in rows.items():
            length, table = cache.cache_length(rid), cache.block_table(rid)
            needed += ceil_div(length + len(tokens), 4) - len(table)
            if length % 4:
                last = table[length // 4]
                if cache.ref_count(last) - copies.get(last, 0) > 1:
                    copies[last] = copies.get(last, 0) + 1
                    needed += 1
        return needed

    def _append(self, rows: dict[str, list[int]]) -> bool:
        """Append (True), or check that an append the pool cannot hold is refused (False)."""
        stats = self.pool.cache.stats
        needed = self._blocks_needed(rows)
        if needed > stats.free_blocks + stats.cached_blocks:
            before = (self.pool.counts(), {r: self.pool.cache.block_table(r) for r in self.plans})
            with pytest.raises(RuntimeError):
                self.pool.append(rows)
            after = (self.pool.counts(), {r: self.pool.cache.block_table(r) for r in self.plans})
            assert after == before, "a rejected append changed the cache"
            return False
        self.pool.append(rows)
        for rid, tokens in rows.items():
            self.plans[rid] = self.plans[rid][len(tokens) :]
        return True

    # ---- invariants --------------------------------------------------------------------

    @invariant()
    def each_block_has_exactly_one_state(self):
        cache = self.pool.cache
        holders: dict[int, int] = {}
        for rid in self.plans:
            table = cache.block_table(rid)
            assert len(table) == ceil_div(cache.cache_length(rid), 4), f"{rid}: table size"
            assert len(set(table)) == len(table), f"{rid}: a block twice in one table"
            for block in table:
                holders[block] = holders.get(block, 0) + 1
        for block in range(10):
            assert cache.ref_count(block) == holders.get(block, 0), f"block {block} ref count"
        stats = cache.stats
        assert stats.used_blocks == len(holders)
        assert stats.used_blocks + stats.cached_blocks + stats.free_blocks == 10

    @invariant()
    def bytes_held_are_linear_in_tokens(self):
        cache = self.pool.cache
        stats = cache.stats
        assert stats.bytes_held == (10 - stats.free_blocks) * self.pool.block_bytes
        needed = sum(ceil_div(cache.cache_length(rid), 4) for rid in self.plans)
        assert stats.used_blocks <= needed

    @invariant()
    def every_request_reads_its_own_kv(self):
        if self.plans:
            self.pool.assert_stored(*self.plans)


def test_allocator_and_prefix_cache_invariants_hold_after_every_step(make_pool):
    PagedMachine.make_pool = make_pool
    run_state_machine_as_test(
        PagedMachine,
        settings=settings(
            max_examples=20,
            stateful_step_count=20,
            deadline=None,
            # The same examples on every run (and no example database): one verdict per
            # candidate, not one that depends on the seed or on which tests ran before.
            derandomize=True,
            database=None,
            # No shrinking: a broken candidate is reported at once, not minutes later
            # (the known-bad ladder grades many); the failing steps are printed as found.
            phases=(Phase.explicit, Phase.reuse, Phase.generate),
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
