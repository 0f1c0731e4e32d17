"""PT34 cache_write_ / cache_written: the cache-update operator's mutation contract.

Eager values (the slots written, the rest of the cache, the inputs only read), the meta
(fake) result and the errors raised are values this process receives; every oracle is
computed before the candidate's call. The schemas, tags, torch.library.opcheck's verdict
and a compiled call run on the candidate's own torch (`torch_beside`): its word, so the
clauses resting on them are advisory.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded
from gptlab_testkit.rank_pair import torch_beside

drill = candidate("DRILL_PT34_MODULE")

pytestmark = [pytest.mark.owner("pt34"), pytest.mark.contract]

WRITE, FRESH = "gptlab::cache_write_", "gptlab::cache_written"


def case(slots: int, *features: int, index: list[int], seed: int, dtype=torch.float32):
    cache = seeded(slots, *features, seed=seed).to(dtype)
    value = seeded(len(index), *features, seed=seed + 1).to(dtype)
    return cache, torch.tensor(index, dtype=torch.int64), value


def oracle(cache: torch.Tensor, index: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Slot by slot, on a copy."""
    want = cache.clone()
    for row, slot in enumerate(index.tolist()):
        want[slot] = value[row]
    return want


CASES = {
    "2-D, slots 3 and 1": dict(slots=5, features=(4,), index=[3, 1]),
    "3-D kv slots, last slot": dict(slots=6, features=(2, 4), index=[5, 2, 0]),
    "one slot not the first": dict(slots=4, features=(8,), index=[2]),
    "1-D cache of scalar slots": dict(slots=6, features=(), index=[4, 0]),
}


@pytest.mark.clause("PT34.2", "PT34.3")
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_write_only_form_fills_its_slots_in_place_and_returns_none(name):
    spec = CASES[name]
    cache, index, value = case(spec["slots"], *spec["features"], index=spec["index"], seed=3)
    want = oracle(cache, index, value)  # also holds every unrelated slot's old value

    with inputs_untouched(index=index, value=value):
        returned = drill.cache_write_(cache, index, value)

    assert returned is None, f"{name}: cache_write_ returned {type(returned).__name__}"
    assert torch.equal(cache, want), f"{name}: the cache after the write\n{cache}\n{want}"


@pytest.mark.clause("PT34.2")
def test_bfloat16_slots_are_written_exactly():
    cache, index, value = case(5, 2, 4, index=[4, 1], seed=5, dtype=torch.bfloat16)
    want = oracle(cache, index, value)
    drill.cache_write_(cache, index, value)
    assert cache.dtype == torch.bfloat16 and torch.equal(cache, want)


@pytest.mark.clause("PT34.3")
def test_writing_one_layer_of_a_buffer_leaves_the_other_layers_alone():
    buffer = seeded(3, 5, 4, seed=7)  # [layers, slots, width]
    index, value = torch.tensor([2, 0]), seeded(2, 4, seed=8)
    want = buffer.clone()
    want[1] = oracle(buffer[1], index, value)

    drill.cache_write_(buffer[1], index, value)

    assert torch.equal(buffer, want), "a write into layer 1 changed another layer"


@pytest.mark.clause("PT34.1")
def test_the_arguments_bind_by_position_and_by_name():
    cache, index, value = case(5, 4, index=[1, 3], seed=9)
    want = oracle(cache, index, value)
    try:
        fresh = drill.cache_written(cache=cache, index=index, value=value)
        drill.cache_write_(cache=cache, index=index, value=value)
    except Exception as error:  # a custom op checks its arguments' names itself
        pytest.fail(f"the operators do not bind by name: {error}")
    assert torch.equal(fresh, want) and torch.equal(cache, want)


@pytest.mark.clause("PT34.4")
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_fresh_output_form_returns_the_updated_cache_and_reads_its_inputs(name):
    spec = CASES[name]
    cache, index, value = case(spec["slots"], *spec["features"], index=spec["index"], seed=11)
    want = oracle(cache, index, value)

    with inputs_untouched(cache=cache, index=index, value=value):
        got = drill.cache_written(cache, index, value)

    assert got.shape == cache.shape and got.dtype == cache.dtype, f"{tuple(got.shape)}"
    assert torch.equal(got, want), f"{name}:\n{got}\n{want}"


@pytest.mark.clause("PT34.4")
def test_the_fresh_output_is_not_the_cache():
    cache, index, value = case(4, 4, index=[0], seed=13)
    got = drill.cache_written(cache, index, value)
    got.fill_(-7.0)  # writing the result must not reach the cache
    assert torch.equal(cache, case(4, 4, index=[0], seed=13)[0]), "the result shares the cache"


@pytest.mark.clause("PT34.5")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_the_fakes_state_the_caches_metadata_and_none(dtype):
    cache, index, value = case(6, 2, 4, index=[5, 1], seed=15, dtype=dtype)
    meta = [t.to("meta") for t in (cache, index, value)]

    fresh = drill.cache_written(*meta)
    written = drill.cache_write_(*meta)

    assert fresh.is_meta, f"a meta call returned a tensor on {fresh.device}"
    assert fresh.shape == cache.shape and fresh.dtype == dtype, f"{fresh.shape} {fresh.dtype}"
    assert written is None, f"a meta cache_write_ returned {type(written).__name__}"


def rejected(call, *args) -> type[BaseException]:
    with pytest.raises(Exception) as raised:
        call(*args)
    return raised.type


BAD_VALUES = {"width 3 for 4": (2, 3), "one row for two slots": (1, 4)}


@pytest.mark.clause("PT34.6")
@pytest.mark.parametrize("operator", ["cache_write_", "cache_written"])
@pytest.mark.parametrize("bad", sorted(BAD_VALUES))
def test_a_value_of_the_wrong_shape_fails_the_same_way_real_and_fake(operator, bad):
    call = getattr(drill, operator)
    cache, index, good = case(5, 4, index=[3, 1], seed=17)
    assert torch.equal(drill.cache_written(cache, index, good), oracle(cache, index, good))
    value = seeded(*BAD_VALUES[bad], seed=18)

    with inputs_untouched(cache=cache, index=index, value=value):
        real = rejected(call, cache, index, value)
    fake = rejected(call, cache.to("meta"), index.to("meta"), value.to("meta"))

    assert issubclass(real, BAD_VALUE | RuntimeError), f"real raised {real.__name__}"
    assert real is fake, f"{operator}: real raised {real.__name__}, fake {fake.__name__}"


def declared_schema(operator: str) -> torch._C.FunctionSchema:
    """The operator's schema as the candidate's dispatcher holds it, parsed here."""
    dump = torch_beside(drill, "torch._C")._dispatch_dump(operator)
    lines = [line for line in str(dump).splitlines() if line.startswith("schema: ")]
    assert lines, f"no schema registered for {operator}: {dump!r}"
    return torch._C.parse_schema(lines[0].removeprefix("schema: ").split(" [")[0])


def written_arguments(schema: torch._C.FunctionSchema) -> list[str]:
    return [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]


@pytest.mark.clause("PT34.7")
def test_the_write_only_schema_declares_cache_mutated():
    schema = declared_schema(WRITE)
    assert written_arguments(schema) == ["cache"], f"mutated arguments: {schema}"


@pytest.mark.clause("PT34.7")
def test_the_write_only_schema_returns_nothing():
    schema = declared_schema(WRITE)
    assert not schema.returns, f"the write-only form returns something: {schema}"


@pytest.mark.clause("PT34.7")
def test_the_fresh_output_schema_declares_no_mutation():
    schema = declared_schema(FRESH)
    assert not schema.is_mutable and len(schema.returns) == 1, f"{schema}"


@pytest.mark.clause("PT34.7")
def test_the_fresh_output_schema_declares_no_alias():
    schema = declared_schema(FRESH)
    aliased = [a.name for a in (*schema.arguments, *schema.returns) if a.alias_info is not None]
    assert not aliased, f"the schema declares aliasing on {aliased}: {schema}"


@pytest.mark.clause("PT34.7")
@pytest.mark.parametrize("operator", ["cache_write_", "cache_written"])
def test_each_operator_carries_the_pt2_compliant_tag(operator):
    overload = getattr(torch_beside(drill, "torch").ops.gptlab, operator).default
    names = [str(tag.name) for tag in overload.tags]
    assert "pt2_compliant_tag" in names, f"{operator} tags: {names}"


OPCHECK_CACHES = {
    "contiguous": lambda: seeded(5, 2, 4, seed=19),
    "slot-minor": lambda: seeded(2, 4, 5, seed=19).permute(2, 0, 1),  # slots not outermost
    "features transposed": lambda: seeded(5, 4, 2, seed=19).transpose(1, 2),
}


@pytest.mark.clause("PT34.8")
@pytest.mark.parametrize("operator", ["cache_write_", "cache_written"])
@pytest.mark.parametrize("layout", sorted(OPCHECK_CACHES))
def test_opcheck_passes(operator, layout):
    cache = OPCHECK_CACHES[layout]()
    index, value = torch.tensor([4, 1]), seeded(2, 2, 4, seed=20)

    opcheck = torch_beside(drill, "torch.library").opcheck
    report = dict(opcheck(getattr(drill, operator), (cache, index, value), raise_exception=False))

    failed = sorted(name for name, verdict in report.items() if verdict != "SUCCESS")
    assert report and not failed, f"opcheck failed {failed} on {operator} with a {layout} cache"


@pytest.mark.clause("PT34.9")
def test_a_functionalized_compiled_write_keeps_the_write():
    cache, index, value = case(5, 4, index=[3, 1], seed=21)
    want = oracle(cache, index, value)
    compile_ = torch_beside(drill, "torch").compile
    compiled = compile_(drill.cache_write_, backend="aot_eager", fullgraph=True)

    try:
        returned = compiled(cache, index, value)
    except Exception as error:  # a graph break, a missing fake: the candidate's failure
        pytest.fail(f"torch.compile(cache_write_, backend='aot_eager') failed: {error}")

    assert returned is None and torch.equal(cache, want), f"the compiled write was lost:\n{cache}"
