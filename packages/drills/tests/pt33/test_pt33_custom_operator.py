"""PT33 rms_norm(x, weight, eps): RMSNorm as the functional custom op gptlab::rms_norm.

Eager values, the meta (fake) result's shape and dtype, and the errors raised are values
this process receives. The op's schema, torch.library.opcheck's verdict and a compiled
call run on the candidate's own torch (`torch_beside`): that is its word, so the clauses
resting on them are advisory.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded
from gptlab_testkit.rank_pair import torch_beside

drill = candidate("DRILL_PT33_MODULE")

pytestmark = [pytest.mark.owner("pt33"), pytest.mark.contract]

OP = "gptlab::rms_norm"
EPS = 1e-2  # large enough that where eps enters shows at fp32 tolerance


def oracle(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Row by row in float64."""
    rows = x.double().reshape(-1, x.shape[-1])
    out = torch.empty_like(rows)
    for i, row in enumerate(rows):
        out[i] = row / torch.sqrt((row * row).mean() + eps) * weight.double()
    return out.reshape(x.shape)


def inputs(*shape: int, seed: int, dtype: torch.dtype = torch.float32):
    return seeded(*shape, seed=seed, dtype=dtype), seeded(shape[-1], seed=seed + 1, dtype=dtype)


def check(x: torch.Tensor, weight: torch.Tensor, eps: float, what: str, tol: float = 1e-5) -> None:
    want = oracle(x, weight, eps)  # before the call: a write into x cannot reach it
    got = drill.rms_norm(x, weight, eps)
    assert got.shape == x.shape, f"{what}: shape {tuple(got.shape)}, x is {tuple(x.shape)}"
    assert got.dtype == x.dtype, f"{what}: dtype {got.dtype}, x is {x.dtype}"
    assert torch.allclose(got.double(), want, atol=tol, rtol=tol), f"{what}:\n{got}\n{want}"


def noncontiguous() -> torch.Tensor:
    return seeded(4, 3, 8, seed=7).transpose(0, 1)  # [3, 4, 8], rows not adjacent


@pytest.mark.clause("PT33.1", "PT33.2", "PT33.3")
@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 16), (8,)], ids=str)
def test_eager_values_equal_the_row_oracle(shape):
    x, weight = inputs(*shape, seed=len(shape))
    check(x, weight, EPS, f"x {shape}")


@pytest.mark.clause("PT33.1")
def test_the_arguments_bind_by_position_and_by_name():
    x, weight = inputs(3, 8, seed=20)
    want = oracle(x, weight, EPS)
    try:
        by_position = drill.rms_norm(x, weight, EPS)
        by_name = drill.rms_norm(x=x, weight=weight, eps=EPS)
    except Exception as error:  # a custom op checks its arguments' types itself
        pytest.fail(f"rms_norm(x, weight, eps) does not bind: {error}")
    assert torch.allclose(by_position.double(), want, atol=1e-5), "called by position"
    assert torch.allclose(by_name.double(), want, atol=1e-5), "called by name"


@pytest.mark.clause("PT33.3")
def test_eps_enters_under_the_root():
    x, weight = inputs(3, 4, seed=3)
    check(x * 1e-3, weight, 0.5, "eps 0.5 beside tiny x")


@pytest.mark.clause("PT33.3")
def test_a_noncontiguous_x_is_read_by_its_logical_layout():
    x, weight = noncontiguous(), seeded(8, seed=8)
    check(x, weight, EPS, "transposed x")


@pytest.mark.clause("PT33.2")
def test_bfloat16_stays_bfloat16():
    x, weight = inputs(3, 8, seed=9, dtype=torch.bfloat16)
    check(x, weight, EPS, "bf16", tol=2e-2)


@pytest.mark.clause("PT33.4")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 8), (5, 4)], ids=str)
def test_the_fake_result_has_xs_size_dtype_and_device(dtype, shape):
    x, weight = inputs(*shape, seed=10, dtype=dtype)

    fake = drill.rms_norm(x.to("meta"), weight.to("meta"), EPS)

    assert fake.is_meta, f"a meta call returned a tensor on {fake.device}"
    assert fake.shape == x.shape and fake.dtype == dtype, f"{tuple(fake.shape)} {fake.dtype}"


def rejected(call, *args) -> type[BaseException]:
    """The exception class `call(*args)` raised (the test fails if none)."""
    with pytest.raises(Exception) as raised:
        call(*args)
    return raised.type


@pytest.mark.clause("PT33.5")
@pytest.mark.parametrize("width", [7, 16], ids=["weight too short", "weight too long"])
def test_a_weight_of_the_wrong_size_fails_the_same_way_real_and_fake(width):
    x = seeded(3, 8, seed=11)
    weight = seeded(width, seed=12)
    check(x, seeded(8, seed=12), EPS, "the same x with a right-sized weight")

    with inputs_untouched(x=x, weight=weight):
        real = rejected(drill.rms_norm, x, weight, EPS)
    fake = rejected(drill.rms_norm, x.to("meta"), weight.to("meta"), EPS)

    assert issubclass(real, BAD_VALUE | RuntimeError), f"real raised {real.__name__}"
    assert real is fake, f"real raised {real.__name__}, fake {fake.__name__}"


def declared_schema() -> torch._C.FunctionSchema:
    """gptlab::rms_norm's schema as the candidate's dispatcher holds it, parsed here."""
    dump = torch_beside(drill, "torch._C")._dispatch_dump(OP)
    lines = [line for line in str(dump).splitlines() if line.startswith("schema: ")]
    assert lines, f"no schema registered for {OP}: {dump!r}"
    return torch._C.parse_schema(lines[0].removeprefix("schema: ").split(" [")[0])


@pytest.mark.clause("PT33.6")
def test_the_schema_declares_no_mutation():
    schema = declared_schema()

    assert not schema.is_mutable, f"the schema declares a mutation: {schema}"
    assert [a.name for a in schema.arguments][:2] == ["x", "weight"], f"{schema}"


@pytest.mark.clause("PT33.6")
def test_the_schema_declares_no_alias():
    schema = declared_schema()

    aliased = [a.name for a in (*schema.arguments, *schema.returns) if a.alias_info is not None]
    assert not aliased, f"the schema declares aliasing on {aliased}: {schema}"


@pytest.mark.clause("PT33.7")
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "permuted"])
def test_opcheck_passes_on_each_example(layout):
    examples = {
        "contiguous": lambda: seeded(3, 8, seed=13),
        "transposed": noncontiguous,
        "permuted": lambda: seeded(8, 3, 4, seed=13).permute(1, 2, 0),  # C has stride 12
    }
    x = examples[layout]()
    weight = seeded(8, seed=14)

    opcheck = torch_beside(drill, "torch.library").opcheck
    report = dict(opcheck(drill.rms_norm, (x, weight, EPS), raise_exception=False))

    failed = sorted(name for name, verdict in report.items() if verdict != "SUCCESS")
    assert report and not failed, f"opcheck failed {failed} on a {layout} x"


@pytest.mark.clause("PT33.8")
def test_a_compiled_call_equals_eager():
    x, weight = inputs(4, 8, seed=15)
    want = oracle(x, weight, EPS)
    compiled = torch_beside(drill, "torch").compile(drill.rms_norm, fullgraph=True, backend="eager")

    try:
        got = compiled(x, weight, EPS)
    except Exception as error:  # a graph break, a missing fake: the candidate's failure
        pytest.fail(f"torch.compile(rms_norm, fullgraph=True) failed: {error}")

    assert torch.allclose(got.double(), want, atol=1e-5, rtol=1e-5), f"{got}"


@pytest.mark.clause("PT33.9")
def test_x_and_weight_are_only_read():
    x, weight = inputs(3, 8, seed=16)
    with inputs_untouched(x=x, weight=weight):
        got = drill.rms_norm(x, weight, EPS)
    assert torch.allclose(got.double(), oracle(x, weight, EPS), atol=1e-5, rtol=1e-5)
