"""A second stranger's paged_kv, from packages/paged_kv/README.md's Contract alone.

Unlike the reference and good_paged_kv_tuple_chain on purpose: the free queue hands
out the HIGHEST block ids first (a stack over range(n)); published blocks are keyed
by a SHA-256 chain of bytes; the namespace is a slotted class with its own equality
and hash, not a dataclass; cached blocks wait in an OrderedDict; a free releases a
table shallowest block first; K/V move with advanced indexing over (block, offset)
pairs; error messages are prose ("unknown request id 'zzz'", "layer count must be a
positive int") that never print a parameter's identifier; it validates ids first;
`model_inputs([])` is `(None, None, None)`; and it has a public *method*
`request_ids()`, named like an attribute a grader might be tempted to read.
"""

VARIABLE = "PAGED_KV_MODULE"  # graded through this variable by `nox -s known_bad`

import hashlib
from collections import OrderedDict
from types import SimpleNamespace

import torch


class PagedNamespace:
    __slots__ = ("cache_id", "model_id")

    def __init__(self, model_id, cache_id):
        object.__setattr__(self, "model_id", model_id)
        object.__setattr__(self, "cache_id", cache_id)

    def __setattr__(self, name, value):
        raise AttributeError("a namespace cannot be changed")

    def __eq__(self, other):
        if not isinstance(other, PagedNamespace):
            return NotImplemented
        return (self.model_id, self.cache_id) == (other.model_id, other.cache_id)

    def __hash__(self):
        return hash(("namespace", self.model_id, self.cache_id))

    def __repr__(self):
        return f"namespace of model {self.model_id!r}, cache {self.cache_id!r}"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _chain(parent, namespace, start, tokens):
    """SHA-256 over the parent's digest and this block's identity."""
    text = repr((namespace.model_id, namespace.cache_id, start, tuple(tokens)))
    return hashlib.sha256(parent + text.encode()).digest()


class _Request:
    def __init__(self, namespace, start):
        self.namespace = namespace
        self.start = start
        self.blocks = []  # block ids, in position order
        self.tokens = []  # tokens whose K/V are stored
        self.digests = []  # chain digest of each full block

    @property
    def next_position(self):
        return self.start + len(self.tokens)


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
        sizes = {
            "layer count": layer_count,
            "head count": head_count,
            "head dim": head_dim,
            "number of blocks": num_blocks,
            "block size": block_size,
        }
        for words, value in sizes.items():
            if not _is_int(value) or value < 1:
                raise ValueError(f"{words} must be a positive int, got {value!r}")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"the cache dtype must be floating point, got {dtype}")
        self.block_size = block_size
        self.num_blocks = num_blocks
        shape = (num_blocks, head_count, block_size, head_dim)
        self.storage = [
            (torch.zeros(shape, dtype=dtype, device=device),
             torch.zeros(shape, dtype=dtype, device=device))
            for _ in range(layer_count)
        ]  # fmt: skip
        self._stack = list(range(num_blocks))  # pop() hands out the highest id first
        self._holders = [0] * num_blocks
        self._published = {}  # digest -> block
        self._digest_of = {}  # block -> digest
        self._cached = OrderedDict()  # block -> None, least recently released first
        self._requests = {}
        self._hits = self._misses = self._evictions = 0

    # ---- queries ------------------------------------------------------------------

    def request_ids(self):
        """The open requests (a method: not a graded name)."""
        return list(self._requests)

    @property
    def stats(self):
        key = self.storage[0][0]
        block_bytes = 2 * len(self.storage) * key[0].numel() * key.element_size()
        free = len(self._stack)
        cached = len(self._cached)
        return SimpleNamespace(
            hits=self._hits,
            misses=self._misses,
            evictions=self._evictions,
            cached_blocks=cached,
            used_blocks=self.num_blocks - free - cached,
            free_blocks=free,
            bytes_held=(self.num_blocks - free) * block_bytes,
        )

    def _open(self, request_id):
        try:
            return self._requests[request_id]
        except (KeyError, TypeError):
            raise ValueError(f"unknown request id {request_id!r}") from None

    def block_table(self, request_id):
        return tuple(self._open(request_id).blocks)

    def cache_length(self, request_id):
        return len(self._open(request_id).tokens)

    def ref_count(self, block):
        if not _is_int(block) or not 0 <= block < self.num_blocks:
            raise ValueError(f"there is no block {block!r} in a pool of {self.num_blocks}")
        return self._holders[block]

    def slot_mapping(self, request_id, positions):
        request = self._open(request_id)
        wanted = positions.tolist() if isinstance(positions, torch.Tensor) else list(positions)
        held = len(request.blocks) * self.block_size
        slots = []
        for position in wanted:
            offset = position - request.start
            if not 0 <= offset < held:
                raise ValueError(f"position {position} lies outside the request's blocks")
            block = request.blocks[offset // self.block_size]
            slots.append(block * self.block_size + offset % self.block_size)
        return torch.tensor(slots, dtype=torch.long, device=self.storage[0][0].device)

    # ---- blocks -------------------------------------------------------------------

    def _take(self):
        if self._stack:
            block = self._stack.pop()
        else:
            block, _ = self._cached.popitem(last=False)
            del self._published[self._digest_of.pop(block)]
            self._evictions += 1
        self._holders[block] = 1
        return block

    def _hold(self, block):
        self._holders[block] += 1
        self._cached.pop(block, None)

    def _release(self, block):
        self._holders[block] -= 1
        if self._holders[block] == 0:
            if block in self._digest_of:
                self._cached[block] = None
            else:
                self._stack.append(block)

    # ---- lifecycle ----------------------------------------------------------------

    def admit(self, request_id, token_ids, namespace, start_position=0):
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            raise ValueError(f"a request id is a str or an int, got {request_id!r}")
        if request_id in self._requests:
            raise ValueError(f"request id {request_id!r} is already open")
        tokens = self._prompt(token_ids)
        if not isinstance(namespace, PagedNamespace):
            raise ValueError(f"expected a PagedNamespace, got {namespace!r}")
        if not _is_int(start_position) or start_position < 0:
            raise ValueError(f"the start position must be an int >= 0, got {start_position!r}")
        request = _Request(namespace, start_position)
        size = self.block_size
        eligible = (len(tokens) - 1) // size
        parent = b""
        for index in range(eligible):
            digest = _chain(
                parent, namespace, start_position, tokens[index * size : (index + 1) * size]
            )
            block = self._published.get(digest)
            if block is None:
                break
            request.blocks.append(block)
            request.digests.append(digest)
            parent = digest
        for block in request.blocks:
            self._hold(block)
        reused = len(request.blocks)
        self._hits += reused
        self._misses += eligible - reused
        request.tokens = tokens[: reused * size]
        self._requests[request_id] = request
        return reused * size

    @staticmethod
    def _prompt(token_ids):
        if isinstance(token_ids, torch.Tensor):
            if token_ids.is_floating_point() or token_ids.dtype == torch.bool:
                raise ValueError(f"prompt tokens must be integers, got {token_ids.dtype}")
            if token_ids.dim() == 2 and token_ids.shape[0] == 1:
                token_ids = token_ids[0]
            if token_ids.dim() != 1:
                raise ValueError(f"a prompt tensor is [T] or [1, T], got {tuple(token_ids.shape)}")
            token_ids = token_ids.tolist()
        tokens = list(token_ids)
        if not tokens:
            raise ValueError("a prompt needs at least one token, got []")
        for token in tokens:
            if not _is_int(token) or token < 0:
                raise ValueError(f"prompt token {token!r} is not a non-negative int")
        return tokens

    def fork(self, parent_id, child_id):
        parent = self._open(parent_id)
        if isinstance(child_id, bool) or not isinstance(child_id, str | int):
            raise ValueError(f"a request id is a str or an int, got {child_id!r}")
        if child_id in self._requests:
            raise ValueError(f"request id {child_id!r} is already open")
        child = _Request(parent.namespace, parent.start)
        child.blocks = list(parent.blocks)
        child.tokens = list(parent.tokens)
        child.digests = list(parent.digests)
        for block in child.blocks:
            self._hold(block)
        self._requests[child_id] = child

    def free(self, request_id):
        request = self._open(request_id)
        del self._requests[request_id]
        for block in request.blocks:  # shallowest first
            self._release(block)

    def append(self, request_ids, token_ids, positions, past_key_values):
        requests = self._rows(request_ids)
        rows, count = self._check_tensors(len(requests), token_ids, positions, past_key_values)
        for row, request in enumerate(requests):
            given = positions[row].tolist()
            first = request.next_position
            if given != list(range(first, first + count)):
                raise ValueError(
                    f"row {row} must continue at position {first}, got {given[0]}..{given[-1]}"
                )
        self._reserve(requests, count)
        key_dev = self.storage[0][0].device
        for row, request in enumerate(requests):
            self._copy_shared_tail(request)
            while len(request.blocks) * self.block_size < len(request.tokens) + count:
                request.blocks.append(self._take())
            where = torch.arange(len(request.tokens), len(request.tokens) + count, device=key_dev)
            table = torch.tensor(request.blocks, dtype=torch.long, device=key_dev)
            blocks, offsets = table[where // self.block_size], where % self.block_size
            with torch.no_grad():
                for (key, value), (new_key, new_value) in zip(self.storage, past_key_values):
                    key[blocks, :, offsets] = new_key[row].transpose(0, 1).to(key.dtype)
                    value[blocks, :, offsets] = new_value[row].transpose(0, 1).to(value.dtype)
            request.tokens.extend(rows[row])
            self._publish_full_blocks(request)

    def _rows(self, request_ids):
        ids = list(request_ids)
        if not ids:
            raise ValueError("an append needs at least one request")
        for index, rid in enumerate(ids):
            if rid in ids[:index]:
                raise ValueError(f"request id {rid!r} is repeated")
        return [self._open(rid) for rid in ids]

    def _check_tensors(self, count_rows, token_ids, positions, past_key_values):
        key0 = self.storage[0][0]
        for words, tensor in (("token ids", token_ids), ("positions", positions)):
            if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.long:
                raise ValueError(
                    f"{words} must be a long tensor, got {getattr(tensor, 'dtype', tensor)}"
                )
            if tensor.device != key0.device:
                raise ValueError(f"{words} are on {tensor.device}, the cache on {key0.device}")
            if tensor.dim() != 2 or tensor.shape[0] != count_rows or tensor.shape[1] < 1:
                raise ValueError(
                    f"{words} must be [{count_rows}, T >= 1], got {tuple(tensor.shape)}"
                )
        if positions.shape != token_ids.shape:
            raise ValueError(
                f"positions {tuple(positions.shape)} != token ids {tuple(token_ids.shape)}"
            )
        rows = token_ids.tolist()
        if min(min(row) for row in rows) < 0:
            raise ValueError(f"token ids must be non-negative, got {min(min(row) for row in rows)}")
        count = token_ids.shape[1]
        if len(past_key_values) != len(self.storage):
            raise ValueError(
                f"K/V for {len(past_key_values)} layers, the cache has {len(self.storage)}"
            )
        want = (count_rows, key0.shape[1], count, key0.shape[3])
        for layer, pair in enumerate(past_key_values):
            for part, tensor in zip(("key", "value"), pair, strict=True):
                if tuple(tensor.shape) != want:
                    raise ValueError(f"layer {layer} {part} shape {tuple(tensor.shape)} != {want}")
                if tensor.dtype != key0.dtype:
                    raise ValueError(
                        f"layer {layer} {part} dtype {tensor.dtype} != cache dtype {key0.dtype}"
                    )
                if tensor.device != key0.device:
                    raise ValueError(
                        f"layer {layer} {part} is on {tensor.device}, not {key0.device}"
                    )
        return rows, count

    def _reserve(self, requests, count):
        """Raise before any change when the blocks needed exceed free + cached."""
        size, needed, copies = self.block_size, 0, {}
        for request in requests:
            length = len(request.tokens)
            needed += -(-(length + count) // size) - len(request.blocks)
            if length % size:
                tail = request.blocks[-1]
                if self._holders[tail] - copies.get(tail, 0) > 1:
                    copies[tail] = copies.get(tail, 0) + 1
                    needed += 1
        available = len(self._stack) + len(self._cached)
        if needed > available:
            raise RuntimeError(
                f"the append needs {needed} blocks, only {available} are free or cached"
            )

    def _copy_shared_tail(self, request):
        if len(request.tokens) % self.block_size == 0:
            return
        shared = request.blocks[-1]
        if self._holders[shared] == 1:
            return
        copy = self._take()
        with torch.no_grad():
            for key, value in self.storage:
                key[copy].copy_(key[shared])
                value[copy].copy_(value[shared])
        self._release(shared)
        request.blocks[-1] = copy

    def _publish_full_blocks(self, request):
        size = self.block_size
        while len(request.digests) < len(request.tokens) // size:
            index = len(request.digests)
            parent = request.digests[-1] if request.digests else b""
            digest = _chain(
                parent,
                request.namespace,
                request.start,
                request.tokens[index * size : (index + 1) * size],
            )
            request.digests.append(digest)
            block = request.blocks[index]
            if digest not in self._published and block not in self._digest_of:
                self._published[digest] = block
                self._digest_of[block] = digest

    def model_inputs(self, request_ids):
        requests = [self._open(rid) for rid in request_ids]
        longest = max((len(r.tokens) for r in requests), default=0)
        if longest == 0:
            return None, None, None
        key0 = self.storage[0][0]
        device = key0.device
        past = []
        for key, value in self.storage:
            rows_k, rows_v = [], []
            for request in requests:
                n = len(request.tokens)
                where = torch.arange(n, device=device)
                table = torch.tensor(request.blocks or [0], dtype=torch.long, device=device)
                blocks, offsets = table[where // self.block_size], where % self.block_size
                pad = (0, 0, 0, longest - n)  # zeros after the row's tokens
                rows_k.append(torch.nn.functional.pad(key[blocks, :, offsets].transpose(0, 1), pad))
                rows_v.append(
                    torch.nn.functional.pad(value[blocks, :, offsets].transpose(0, 1), pad)
                )
            past.append((torch.stack(rows_k), torch.stack(rows_v)))
        lengths = torch.tensor([len(r.tokens) for r in requests], dtype=torch.long, device=device)
        starts = torch.tensor([r.start for r in requests], dtype=torch.long, device=device)
        return tuple(past), lengths, starts
