"""PT32 LogitsProcessor and export_processor(vocab_size): one export, any batch size.

The saved program is read and run here (`conftest.read_saved_program`): what it computes
is this process's own value. Each export costs a couple of seconds, so each test exports
once and checks several batch sizes against it.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT32_MODULE")

pytestmark = [pytest.mark.owner("pt32"), pytest.mark.contract]

V = 6
DATA_DEPENDENT = frozenset({"_local_scalar_dense", "nonzero", "masked_select", "unique"})
METADATA_CHECKS = ("torch.ops.aten._assert_tensor_metadata.default",)  # a cast's check: no tensor
UNBACKED = "Symbol('u"  # how an unbacked (data-dependent) size symbol is spelled


def batch(B: int, seed: int, vocab: int = V) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """logits [B, vocab], temperature [B] in (0.25, 2.25), allowed [B, vocab] with row 1
    (when there is one) allowing nothing and every other row something."""
    generator = torch.Generator().manual_seed(seed)
    logits = seeded(B, vocab, seed=seed) * 3
    temperature = torch.rand(B, generator=generator) * 2 + 0.25
    allowed = torch.rand(B, vocab, generator=generator) > 0.4
    allowed[:, seed % vocab] = True
    if B > 1:
        allowed[1] = False
    return logits, temperature, allowed


def oracle(logits: torch.Tensor, temperature: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Row by row in float64: softmax over the allowed tokens of logits / t; zeros where
    a row allows nothing."""
    out = torch.zeros(logits.shape, dtype=torch.float64)
    for b in range(logits.shape[0]):
        keep = allowed[b]
        if keep.any():
            scaled = logits[b, keep].double() / float(temperature[b])
            out[b, keep] = torch.softmax(scaled, dim=0)
    return out


def check(got: torch.Tensor, inputs: tuple[torch.Tensor, ...], what: str) -> None:
    want = oracle(*inputs)
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert got.dtype == torch.float32, f"{what}: dtype {got.dtype}, want float32"
    assert torch.allclose(got.double(), want, atol=1e-6, rtol=1e-5), f"{what}:\n{got}\n{want}"


def eager(*inputs: torch.Tensor) -> torch.Tensor:
    """The module's output on copies: a write into its inputs cannot reach the oracle's."""
    return drill.LogitsProcessor()(*(tensor.clone() for tensor in inputs))


def exported(program, inputs: tuple[torch.Tensor, ...], what: str) -> torch.Tensor:
    """The program's output, run here; a program that refuses valid inputs fails the test."""
    try:
        return program.run(*inputs)
    except AssertionError as refused:  # the reader's UnreadableProgramError
        pytest.fail(f"{what}: the program refused a valid batch: {refused}")


@pytest.mark.clause("PT32.1", "PT32.2", "PT32.3", "PT32.4")
@pytest.mark.parametrize("B", [1, 4])
def test_the_module_gives_masked_tempered_probabilities(B):
    inputs = batch(B, seed=B)
    check(eager(*inputs), inputs, f"eager, B={B}")


@pytest.mark.clause("PT32.1")
def test_forward_binds_its_arguments_by_name():
    logits, temperature, allowed = batch(3, seed=40)
    try:
        got = drill.LogitsProcessor()(allowed=allowed, logits=logits, temperature=temperature)
    except TypeError as error:
        pytest.fail(f"forward(logits=, temperature=, allowed=) does not bind: {error}")
    check(got, batch(3, seed=40), "called by name")


@pytest.mark.clause("PT32.4", "PT32.6")
def test_the_module_gives_an_all_masked_row_zeros_beside_normal_rows():
    inputs = batch(3, seed=5)  # row 1 allows nothing
    got = eager(*inputs)
    check(got, inputs, "row 1 all masked")
    assert torch.equal(got[1], torch.zeros(V)), f"the all-masked row is {got[1]}"


@pytest.mark.clause("PT32.1", "PT32.5", "PT32.6")
def test_one_exported_program_equals_eager_for_three_batch_sizes(saved_program):
    program = saved_program(drill.export_processor(V))

    for B in (2, 3, 5):
        inputs = batch(B, seed=10 + B)
        check(exported(program, inputs, f"B={B}"), inputs, f"exported, B={B}")
        check(eager(*inputs), inputs, f"eager, B={B}")


@pytest.mark.clause("PT32.7")
def test_the_program_fixes_v_and_leaves_b_dynamic(saved_program):
    program = saved_program(drill.export_processor(V))
    logits, temperature, allowed = program.input_sizes()

    assert logits[1] == V and allowed[1] == V, f"V is not fixed at {V}: {logits}, {allowed}"
    assert isinstance(logits[0], str), f"B is fixed at {logits[0]}: export it dynamic"
    assert logits[0] == temperature[0] == allowed[0], "the three inputs do not share B"
    for changed in (V - 1, V + 2):
        with pytest.raises(AssertionError, match="fixed"):  # the reader's UnreadableProgramError
            program.run(*batch(3, seed=changed, vocab=changed))


@pytest.mark.clause("PT32.8")
@pytest.mark.parametrize("bad", [0.0, -1.0], ids=["zero", "negative"])
def test_a_nonpositive_temperature_stops_the_exported_program(saved_program, bad):
    program = saved_program(drill.export_processor(V))
    logits, temperature, allowed = batch(3, seed=20)
    temperature[2] = bad  # a later row

    with pytest.raises(RuntimeError):
        program.run(logits, temperature, allowed)


@pytest.mark.clause("PT32.8", "PT32.10")
@pytest.mark.parametrize("bad", [0.0, -0.5], ids=["zero", "negative"])
def test_a_nonpositive_temperature_is_rejected_by_the_module(bad):
    logits, temperature, allowed = batch(3, seed=21)
    temperature[1] = bad
    check(eager(*batch(3, seed=21)), batch(3, seed=21), "the same batch, valid")

    with inputs_untouched(logits=logits, temperature=temperature, allowed=allowed):
        assert_rejects(
            lambda: drill.LogitsProcessor()(logits, temperature, allowed),
            (BAD_VALUE, RuntimeError),
            "temperature",
            values=[bad],
        )


@pytest.mark.clause("PT32.9")
@pytest.mark.parametrize("vocab", [V, V + 5])
def test_forward_has_no_item_and_no_data_dependent_shape(saved_program, vocab):
    program = saved_program(drill.export_processor(vocab))

    ops = program.op_names()
    assert not DATA_DEPENDENT & set(ops), f"data-dependent ops in forward: {ops}"
    sizes = [str(s) for meta in program.graph["tensor_values"].values() for s in meta["sizes"]]
    assert not any(UNBACKED in s for s in sizes), f"a data-dependent shape: {sizes}"


@pytest.mark.clause("PT32.9")
@pytest.mark.parametrize("vocab", [V, V + 5])
def test_forward_creates_no_tensor_on_a_named_device(saved_program, vocab):
    program = saved_program(drill.export_processor(vocab))  # lifted constants: unreadable

    devices = [
        node["target"]
        for node in program.nodes
        for item in node["inputs"]
        if "as_device" in item["arg"] and node["target"] not in METADATA_CHECKS
    ]
    assert not devices, f"forward creates tensors on a named device: {devices}"


@pytest.mark.clause("PT32.9")
def test_the_graph_does_not_grow_with_v(saved_program):
    small = saved_program(drill.export_processor(V)).op_names()
    large = saved_program(drill.export_processor(V + 5)).op_names()

    assert small == large, f"the graph grows with V (a list over tokens): {small} vs {large}"


@pytest.mark.clause("PT32.10")
def test_the_inputs_are_only_read():
    inputs = batch(3, seed=30)
    logits, temperature, allowed = inputs
    with inputs_untouched(logits=logits, temperature=temperature, allowed=allowed):
        got = drill.LogitsProcessor()(logits, temperature, allowed)
    check(got, batch(3, seed=30), "after the call")
