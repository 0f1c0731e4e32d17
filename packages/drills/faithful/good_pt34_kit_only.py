"""A stranger's PT34 from the kit's words alone: the low-level torch.library API (define,
impl, register_fake) instead of custom_op, a slot-by-slot loop for the write, index_put for
the fresh cache, and one shape check raising RuntimeError (naming the value) from real and
fake alike; slot ranges are left to torch."""

import torch

VARIABLE = "DRILL_PT34_MODULE"

COMPLIANT = (torch.Tag.pt2_compliant_tag,)
torch.library.define(
    "gptlab::cache_write_", "(Tensor(a!) cache, Tensor index, Tensor value) -> ()", tags=COMPLIANT
)
torch.library.define(
    "gptlab::cache_written", "(Tensor cache, Tensor index, Tensor value) -> Tensor", tags=COMPLIANT
)


def _fits(cache, index, value):
    if tuple(value.shape) != (index.numel(), *cache.shape[1:]):
        raise RuntimeError(f"value {tuple(value.shape)} does not fit cache {tuple(cache.shape)}")


@torch.library.impl("gptlab::cache_write_", "CompositeExplicitAutograd")
def _write(cache, index, value):
    _fits(cache, index, value)
    for row, slot in enumerate(index.tolist()):
        cache[slot].copy_(value[row])


@torch.library.register_fake("gptlab::cache_write_")
def _write_fake(cache, index, value):
    _fits(cache, index, value)


@torch.library.impl("gptlab::cache_written", "CompositeExplicitAutograd")
def _written(cache, index, value):
    _fits(cache, index, value)
    return torch.index_put(cache.contiguous(), (index,), value).contiguous()


@torch.library.register_fake("gptlab::cache_written")
def _written_fake(cache, index, value):
    _fits(cache, index, value)
    return torch.empty(cache.shape, dtype=cache.dtype, device=cache.device)


cache_write_ = torch.ops.gptlab.cache_write_.default
cache_written = torch.ops.gptlab.cache_written.default
