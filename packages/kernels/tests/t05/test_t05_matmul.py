"""T05 matmul_act(a, b, activation, out): a tiled matmul, every tail masked, an fp32
accumulator, grouped program order and a SiLU / GELU epilogue. Shapes are small: the
interpreter runs each tile's program in Python."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_kernels.guards import (
    CANARY,
    assert_no_load_outside,
    assert_no_store_outside,
    guarded,
    guarded_output,
)
from gptlab_kernels.suite import device, seeded
from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import assert_binds

kernel = candidate("DRILL_T05_MODULE")

pytestmark = [pytest.mark.owner("t05"), pytest.mark.contract]

EPILOGUES = {"none": lambda v: v, "silu": F.silu, "gelu": F.gelu}


def oracle(a: torch.Tensor, b: torch.Tensor, activation: str) -> torch.Tensor:
    return EPILOGUES[activation](a.double() @ b.double())


def checked(a: torch.Tensor, b: torch.Tensor, activation: str, what: str,
            rtol: float = 1e-5, atol: float = 1e-4) -> torch.Tensor:  # fmt: skip
    """The candidate's out, guards and poison checked, against the float64 oracle."""
    ga, gb = guarded("a", a), guarded("b", b)
    out = guarded_output("out", (a.shape[0], b.shape[1]), a.dtype, device())

    def run() -> torch.Tensor:
        return kernel.matmul_act(ga.view, gb.view, activation, out.view)

    run()
    assert_no_store_outside(out, ga, gb)
    assert_no_load_outside(run, out.view, [ga, gb], what)
    expected = oracle(a, b, activation)
    assert_close(out.view.double(), expected, f"{what}: out", rtol=rtol, atol=atol)
    return out.view


@pytest.mark.clause("T05.1")
def test_the_signature_takes_a_b_activation_out_positionally_and_returns_out():
    a, b = seeded(3, 4, seed=1), seeded(4, 5, seed=2)
    out = torch.empty(3, 5, device=device())

    assert_binds(kernel.matmul_act, a, b, "none", out)
    got = kernel.matmul_act(a, b, "none", out)

    expected = oracle(a, b, "none").float()
    assert_close(got, expected, "the returned tensor", rtol=1e-5, atol=1e-5)
    assert_close(out, expected, "out, written in place", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T05.2")
@pytest.mark.parametrize(
    ("M", "N", "K"), [(1, 1, 1), (2, 31, 7), (4, 64, 64), (33, 17, 100), (64, 40, 33)]
)
def test_m_n_and_k_tails_at_prime_and_power_of_two_sizes(M, N, K):
    checked(seeded(M, K, seed=M + K), seeded(K, N, seed=N + K), "none", f"[{M}, {K}] @ [{K}, {N}]")


@pytest.mark.clause("T05.3")
@pytest.mark.parametrize("K", [512, 600])
def test_fp16_partial_sums_past_65504_that_cancel_are_accumulated_in_fp32(K):
    # each row sums 256 products of +256, then as many of -256: 65536 passes fp16's range
    half = K // 2
    a = torch.cat([torch.full((2, half), 16.0), torch.full((2, K - half), -16.0)], 1)
    a = a.to(device=device(), dtype=torch.float16)
    b = torch.full((K, 8), 16.0, device=device(), dtype=torch.float16)

    out = checked(a, b, "none", f"fp16 partial sums, K={K}", rtol=0, atol=0)

    assert bool(torch.isfinite(out.float()).all()), "an fp16 accumulator overflowed"


@pytest.mark.clause("T05.3")
@pytest.mark.parametrize("activation", ["none", "silu"])
def test_fp16_inputs_accumulate_in_fp32_and_round_once(activation):
    a = seeded(20, 300, seed=3, dtype=torch.float16)
    b = seeded(300, 24, seed=4, dtype=torch.float16)

    checked(a, b, activation, f"fp16 [20, 300] @ [300, 24], {activation}", rtol=2.0**-10,
            atol=2.0**-12)  # fmt: skip


@pytest.mark.clause("T05.4")
@pytest.mark.parametrize(("M", "N", "K"), [(257, 70, 16), (129, 130, 16), (1, 200, 16),
                                           (4, 200, 40)])  # fmt: skip
def test_grouped_order_covers_every_tile_once_for_prefill_and_decode_token_counts(M, N, K):
    # 257 and 129 rows make a last, short group for any tile height 16-128 and group 2-8;
    # 1 and 4 rows (decode) are one tile row, narrower than a group.
    out = checked(seeded(M, K, seed=M), seeded(K, N, seed=N), "none", f"M={M}, N={N}")

    assert not bool((out == CANARY).any()), "a tile of out was never written"


@pytest.mark.clause("T05.5")
@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize(("M", "N", "K"), [(33, 40, 20), (3, 9, 50)])
def test_the_epilogue_runs_on_the_fp32_accumulator(activation, M, N, K):
    a, b = seeded(M, K, seed=K, scale=0.6), seeded(K, N, seed=N, scale=0.6)

    checked(a, b, activation, f"{activation}, [{M}, {K}] @ [{K}, {N}]")
