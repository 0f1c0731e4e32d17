"""The honest twin of the PT34 cheat: the start file's two operators, both registered
functional though both write the cache, with fakes of the cache's size; nothing forged."""

import torch


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
