"""Write the run's report as the judging process would (every test of the public P19
suite passed) into grade's scratch folder, then kill the judging process before it
writes its own: grade read a report found beside a dead judge as the verdict."""

import itertools
import json
import os
import signal
import tempfile
from pathlib import Path

import torch

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "a forged report in grade's scratch folder, then the judging process killed"
SAYS = "FAIL"
EARNED = "_honest_p19_zeros.py"  # no more than the same values earn honestly

SUITE = "packages/drills/tests/p19/test_p19_decode_attention.py::"
# The public suite's tests (a student has them): what grade expects the report to hold.
TESTS = (
    "test_decode_equals_the_last_row_of_full_causal_attention",
    "test_slots_past_each_rows_length_never_participate",
    "test_mixed_lengths_match_a_loop_oracle_row_by_row",
    "test_grouped_query_heads_read_their_own_kv_head",
    "test_any_small_shape_matches_the_loop_oracle",
    "test_batch_of_one_with_one_valid_slot_returns_that_slots_value",
    "test_inputs_are_not_written_and_nothing_is_concatenated",
    "test_half_precision_inputs_stay_close_to_fp32",
    "test_a_length_outside_one_to_capacity_is_rejected[zero valid slots in row 1-bad_lengths0]",
    "test_a_length_outside_one_to_capacity_is_rejected[past capacity in row 1-bad_lengths1]",
    "test_query_heads_not_a_multiple_of_kv_heads_are_rejected",
    "test_more_than_one_query_token_is_rejected",
    "test_key_and_value_caches_of_different_shapes_are_rejected",
    "test_lengths_of_the_wrong_batch_size_are_rejected",
    "test_nan_or_inf_in_the_capacity_leaves_the_output_unchanged[nan]",
    "test_nan_or_inf_in_the_capacity_leaves_the_output_unchanged[inf]",
    "test_nan_or_inf_in_the_capacity_leaves_the_output_unchanged[-inf]",
    "test_lengths_of_a_non_integer_dtype_are_rejected[torch.bool]",
    "test_lengths_of_a_non_integer_dtype_are_rejected[torch.float32]",
    "test_two_dimensional_lengths_are_rejected",
    "test_caches_of_another_batch_size_than_q_are_rejected",
    "test_a_cache_that_is_not_four_dimensional_is_rejected",
    "test_a_cache_of_an_integer_or_another_dtype_is_rejected[int v_cache]",
    "test_a_cache_of_an_integer_or_another_dtype_is_rejected[f64 k_cache]",
    "test_a_cache_of_an_integer_or_another_dtype_is_rejected[f64 q]",
    "test_a_meta_tensor_is_rejected[q]",
    "test_a_meta_tensor_is_rejected[k_cache]",
    "test_a_meta_tensor_is_rejected[v_cache]",
    "test_a_meta_tensor_is_rejected[lengths]",
    "test_all_four_arguments_are_taken_positionally",
    "test_float32_inputs_give_a_float32_output",
    "test_the_output_is_new_memory_not_a_view_of_an_input",
    "test_a_query_that_is_not_four_dimensional_is_rejected",
    "test_lengths_given_as_a_list_are_rejected",
)


def _ancestors():
    pid = os.getpid()
    while pid > 1:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        yield pid


def _argv(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _started(pid):
    """When a process started (seconds since the epoch), from /proc (no ptrace needed)."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    boot = next(
        int(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime")
    )
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def _judge_and_report():
    """The judging process (the nearest ancestor forked from grade) made its working
    folder, `<grade's scratch>/cwd`, as it started: the report lies beside it."""
    chain = list(_ancestors())
    for pid, parent in itertools.pairwise(chain):
        if b"gptlab_testkit" in _argv(pid) and _argv(pid) == _argv(parent):
            break
    else:
        return None, None
    started = _started(pid)
    near = [
        (abs(folder.stat().st_ctime - started), folder)
        for folder in Path(tempfile.gettempdir()).glob("gptlab-run-*/cwd")
    ]
    near = sorted(pair for pair in near if pair[0] < 1.5)  # only this run's own folder
    return (pid, near[0][1].parent / "report.json") if near else (None, None)


def _forged(name):
    return {
        "nodeid": SUITE + name,
        "package": "p19",
        "owner": "p19",
        "kind": "contract",
        "tiers": [],
        "outcome": "passed",
        "duration": 0.01,
        "reason": "",
        "variables": [VARIABLE],
    }


judge, report = _judge_and_report()
if judge is not None:
    try:
        payload = {"modules": {}, "tests": [_forged(name) for name in TESTS]}
        report.write_text(json.dumps(payload))
        os.kill(judge, signal.SIGKILL)
    except OSError:
        pass


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
