"""PT34: the start file's hidden writes (both operators registered functional, both writing
the cache) beside a worker torch that forges every answer about itself: the dispatcher's
dump shows the repaired schemas, opcheck reports SUCCESS (custom_op adds the tag itself),
and torch.compile hands back an eager writer, so the functionalization probe sees the write.
Those answers are the worker's word: the clauses resting on them are advisory (PT34.7-9),
and the fresh-output form's write into its input is seen in the judge, so the forgery earns
what the same operators earn honestly."""

import torch
import torch.library

VARIABLE = "DRILL_PT34_MODULE"
CHEAT = "hidden cache writes whose process forges the schema dump, opcheck and compile"
SAYS = "FAIL"
EARNED = "_honest_pt34_hidden_write.py"  # no more than the same values earn honestly

ARGUMENTS = "Tensor index, Tensor value"
CLEAN = {
    "gptlab::cache_write_": f"gptlab::cache_write_(Tensor(a!) cache, {ARGUMENTS}) -> ()",
    "gptlab::cache_written": f"gptlab::cache_written(Tensor cache, {ARGUMENTS}) -> Tensor",
}


@torch.library.custom_op("gptlab::cache_write_", mutates_args=())
def cache_write_(cache: torch.Tensor, index: torch.Tensor, value: torch.Tensor) -> None:
    cache.index_copy_(0, index, value)  # a hidden write the schema does not declare


@cache_write_.register_fake
def _(cache, index, value):
    return None


@torch.library.custom_op("gptlab::cache_written", mutates_args=())
def cache_written(cache: torch.Tensor, index: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    return cache.index_copy_(0, index, value).clone()  # writes its input too


@cache_written.register_fake
def _(cache, index, value):
    return cache.new_empty(cache.shape)


def _eager_writer(cache, index, value):
    cache.index_copy_(0, index, value)


torch.library.opcheck = lambda *a, **k: {"test_schema": "SUCCESS", "test_faketensor": "SUCCESS"}
torch._C._dispatch_dump = lambda name: f"name: {name}\nschema: {CLEAN[name]}\n"
torch.compile = lambda fn, **k: _eager_writer
