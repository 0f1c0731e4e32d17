"""A stranger's paged_kv written from packages/paged_kv/README.md's Contract alone.

Different internals on purpose: a plain [num_blocks, H, B, D] pool, a LIFO free
list, chained keys as nested tuples (exact, no digest), recency by a tick counter
instead of an ordered dict, per-row python loops, and its own validation order.
"""

VARIABLE = "PAGED_KV_MODULE"  # graded through this variable by `nox -s known_bad`

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class PagedNamespace:
    model_id: str
    cache_id: str


class Counters:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Seq:
    def __init__(self, ns, start):
        self.ns, self.start = ns, start
        self.table, self.toks, self.keys = [], [], []


def _int(name, v, lo):
    if type(v) is not int or v < lo:
        raise ValueError(f"{name}: expected an int >= {lo}, got {v!r}")
    return v


class PagedKVCache:
    def __init__(
        self,
        layer_count,
        head_count,
        head_dim,
        num_blocks,
        block_size,
        *,
        dtype=torch.float32,
        device="cpu",
    ):
        for n, v in (
            ("layer_count", layer_count),
            ("head_count", head_count),
            ("head_dim", head_dim),
            ("num_blocks", num_blocks),
            ("block_size", block_size),
        ):
            _int(n, v, 1)
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ValueError(f"dtype: floating dtype required, got {dtype}")
        self.block_size, self.num_blocks = block_size, num_blocks
        shp = (num_blocks, head_count, block_size, head_dim)
        self.storage = tuple(
            (
                torch.zeros(shp, dtype=dtype, device=device),
                torch.zeros(shp, dtype=dtype, device=device),
            )
            for _ in range(layer_count)
        )
        self.refs = [0] * num_blocks
        self.free_list = list(range(num_blocks))[::-1]  # pop() hands out 0, 1, ...
        self.by_key, self.key_of, self.last_used = {}, {}, {}  # last_used: cached blocks only
        self.tick = 0
        self.seqs = {}
        self.n_hits = self.n_miss = self.n_evict = 0

    # ---------------------------------------------------------------- queries
    @property
    def stats(self):
        free = len(self.free_list)
        cached = len(self.last_used)
        k = self.storage[0][0]
        per_block = 2 * len(self.storage) * k[0].numel() * k.element_size()
        return Counters(
            hits=self.n_hits,
            misses=self.n_miss,
            evictions=self.n_evict,
            cached_blocks=cached,
            bytes_held=(self.num_blocks - free) * per_block,
            used_blocks=self.num_blocks - free - cached,
            free_blocks=free,
        )

    def _seq(self, rid):
        try:
            return self.seqs[rid]
        except (KeyError, TypeError):
            raise ValueError(f"request_id {rid!r}: no such open request") from None

    def block_table(self, request_id):
        return tuple(self._seq(request_id).table)

    def cache_length(self, request_id):
        return len(self._seq(request_id).toks)

    def ref_count(self, block):
        if type(block) is not int or not 0 <= block < self.num_blocks:
            raise ValueError(f"block {block!r} out of range")
        return self.refs[block]

    def slot_mapping(self, request_id, positions):
        s = self._seq(request_id)
        ps = positions.tolist() if isinstance(positions, torch.Tensor) else list(positions)
        out = []
        for p in ps:
            i = p - s.start
            if i < 0 or i >= len(s.table) * self.block_size:
                raise ValueError(f"positions: {p} outside the request's blocks")
            out.append(s.table[i // self.block_size] * self.block_size + i % self.block_size)
        return torch.tensor(out, dtype=torch.long, device=self.storage[0][0].device)

    # ---------------------------------------------------------------- blocks
    def _key(self, parent, toks, s):
        return (parent, tuple(toks), s.ns.model_id, s.ns.cache_id, s.start)

    def _grab(self):
        if self.free_list:
            b = self.free_list.pop()
        else:
            b = min(self.last_used, key=self.last_used.get)  # least recently used cached block
            del self.last_used[b]
            del self.by_key[self.key_of.pop(b)]
            self.n_evict += 1
        self.refs[b] = 1
        return b

    def _hold(self, b):
        self.refs[b] += 1
        self.last_used.pop(b, None)

    def _drop(self, b):
        self.refs[b] -= 1
        if self.refs[b] == 0:
            if b in self.key_of:
                self.tick += 1
                self.last_used[b] = self.tick
            else:
                self.free_list.append(b)

    # ---------------------------------------------------------------- lifecycle
    def admit(self, request_id, token_ids, namespace, start_position=0):
        if isinstance(token_ids, torch.Tensor):
            token_ids = token_ids.reshape(-1).tolist()
        toks = list(token_ids)
        if not toks or any(type(t) is not int or t < 0 for t in toks):
            raise ValueError("token_ids: need a non-empty list of non-negative ints")
        if not isinstance(namespace, PagedNamespace):
            raise ValueError("namespace must be a PagedNamespace")
        _int("start_position", start_position, 0)
        if request_id in self.seqs:
            raise ValueError(f"request_id {request_id!r} already open")
        s = Seq(namespace, start_position)
        B = self.block_size
        eligible = (len(toks) - 1) // B
        parent = None
        for i in range(eligible):
            key = self._key(parent, toks[i * B : (i + 1) * B], s)
            b = self.by_key.get(key)
            if b is None:
                break
            s.table.append(b)
            s.keys.append(key)
            parent = key
        for b in s.table:
            self._hold(b)
        self.n_hits += len(s.table)
        self.n_miss += eligible - len(s.table)
        s.toks = toks[: len(s.table) * B]
        self.seqs[request_id] = s
        return len(s.toks)

    def fork(self, parent_id, child_id):
        p = self._seq(parent_id)
        if child_id in self.seqs:
            raise ValueError(f"child_id {child_id!r} already open")
        c = Seq(p.ns, p.start)
        c.table, c.toks, c.keys = list(p.table), list(p.toks), list(p.keys)
        for b in c.table:
            self._hold(b)
        self.seqs[child_id] = c

    def free(self, request_id):
        s = self._seq(request_id)
        del self.seqs[request_id]
        for b in s.table[::-1]:
            self._drop(b)

    def append(self, request_ids, token_ids, positions, past_key_values):
        k0 = self.storage[0][0]
        dev = k0.device
        # tensors first, ids afterwards (any order is fine by the contract)
        for nm, t in (("token_ids", token_ids), ("positions", positions)):
            if (
                not isinstance(t, torch.Tensor)
                or t.dtype != torch.long
                or t.dim() != 2
                or t.device != dev
            ):
                raise ValueError(f"{nm}: need a long [R, T] tensor on {dev}")
        R, T = token_ids.shape
        if T < 1 or R != len(request_ids):
            raise ValueError(
                f"token_ids: shape {tuple(token_ids.shape)} does not fit {len(request_ids)} rows"
            )
        if positions.shape != token_ids.shape:
            raise ValueError("positions: shape differs from token_ids")
        if len(past_key_values) != len(self.storage):
            raise ValueError("past_key_values: wrong number of (key, value) pairs")
        want = (R, k0.shape[1], T, k0.shape[3])
        for pair in past_key_values:
            for t in pair:
                if (
                    not isinstance(t, torch.Tensor)
                    or tuple(t.shape) != want
                    or t.dtype != k0.dtype
                    or t.device != dev
                ):
                    raise ValueError(
                        f"past_key_values: every tensor must be {want} {k0.dtype} on {dev}"
                    )
        if len(set(request_ids)) != len(request_ids) or not request_ids:
            raise ValueError("request_ids: must be distinct and non-empty")
        seqs = [self._seq(r) for r in request_ids]
        rows = token_ids.tolist()
        if any(t < 0 for row in rows for t in row):
            raise ValueError("token_ids: negative id")
        for s, prow in zip(seqs, positions.tolist()):
            first = s.start + len(s.toks)
            if prow != list(range(first, first + T)):
                raise ValueError(f"positions: expected {first}..{first + T - 1}, got {prow}")
        B = self.block_size
        need, copied = 0, {}
        for s in seqs:
            need += math.ceil((len(s.toks) + T) / B) - len(s.table)
            if len(s.toks) % B:
                b = s.table[-1]
                if self.refs[b] - copied.get(b, 0) > 1:
                    copied[b] = copied.get(b, 0) + 1
                    need += 1
        if need > len(self.free_list) + len(self.last_used):
            raise RuntimeError(f"out of blocks: need {need}")
        for r, s in enumerate(seqs):
            if len(s.toks) % B and self.refs[s.table[-1]] > 1:
                old, new = s.table[-1], self._grab()
                for k, v in self.storage:
                    k[new] = k[old]
                    v[new] = v[old]
                self._drop(old)
                s.table[-1] = new
            while len(s.table) * B < len(s.toks) + T:
                s.table.append(self._grab())
            with torch.no_grad():
                for t in range(T):
                    i = len(s.toks) + t
                    blk, off = s.table[i // B], i % B
                    for (k, v), (kn, vn) in zip(self.storage, past_key_values):
                        k[blk, :, off] = kn[r, :, t]
                        v[blk, :, off] = vn[r, :, t]
            s.toks.extend(rows[r])
            while len(s.keys) < len(s.toks) // B:
                i = len(s.keys)
                key = self._key(s.keys[-1] if s.keys else None, s.toks[i * B : (i + 1) * B], s)
                s.keys.append(key)
                if key not in self.by_key and s.table[i] not in self.key_of:
                    self.by_key[key] = s.table[i]
                    self.key_of[s.table[i]] = key

    def model_inputs(self, request_ids):
        if not request_ids:
            raise ValueError("request_ids: empty")
        seqs = [self._seq(r) for r in request_ids]
        L = max(len(s.toks) for s in seqs)
        if L == 0:
            return None, None, None
        dev = self.storage[0][0].device
        past = []
        for k, v in self.storage:
            kk = k.new_zeros(len(seqs), k.shape[1], L, k.shape[3])
            vv = torch.zeros_like(kk)
            for r, s in enumerate(seqs):
                for i in range(len(s.toks)):
                    blk, off = s.table[i // self.block_size], i % self.block_size
                    kk[r, :, i] = k[blk, :, off]
                    vv[r, :, i] = v[blk, :, off]
            past.append((kk, vv))
        lengths = torch.tensor([len(s.toks) for s in seqs], dtype=torch.long, device=dev)
        starts = torch.tensor([s.start for s in seqs], dtype=torch.long, device=dev)
        return tuple(past), lengths, starts
