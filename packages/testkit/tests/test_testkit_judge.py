"""The judge's machinery: values on the wire, expected tests, owned process trees, the
checkout guard, and a candidate that runs in a worker instead of the test process."""

from __future__ import annotations

import json
import os
import sys
import time
import types
from pathlib import Path

import pytest
import torch
from gptlab_worker import wire

from gptlab_testkit.commands.checkout_guard import CheckoutGuard
from gptlab_testkit.judge.client import Worker
from gptlab_testkit.running.expected import NOT_REPORTED, Expected, verdicts
from gptlab_testkit.running.results import TestResult
from gptlab_testkit.running.suites import ForkedRun

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def round_trip(value: object) -> object:
    read, write = os.pipe()
    blobs: list[bytes] = []
    wire.send(write, {"v": wire.encode(value, blobs)}, blobs)
    message, got = wire.receive(read, time.monotonic() + 5)
    os.close(read)
    os.close(write)
    return wire.decode(message["v"], got)


def test_values_cross_the_wire_by_value() -> None:
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)[:, 1:]  # not contiguous
    got = round_trip({"x": x, "shape": (2, 3), "dtype": torch.bfloat16, "none": None})
    assert isinstance(got, dict)
    assert torch.equal(got["x"], x) and got["shape"] == (2, 3)
    assert got["dtype"] is torch.bfloat16 and got["none"] is None


def test_an_inference_tensor_stays_one_across_the_wire_with_its_layout() -> None:
    with torch.inference_mode():
        x = torch.arange(6.0).reshape(2, 3).t()  # an inference tensor, transposed
    plain = torch.arange(6.0).reshape(2, 3).t()
    got, got_plain = round_trip([x, plain])  # type: ignore[misc]
    assert got.is_inference() and not got_plain.is_inference()
    assert torch.equal(got, x) and got.stride() == x.stride()


def test_a_slice_keeps_its_storage_offset_and_size_one_dims_their_strides() -> None:
    base = torch.arange(24.0)
    rows = base[6:].view(3, 6)[:, 1:]  # offset 7, strided
    column = torch.arange(4.0).view(4, 1).as_strided((4, 1), (1, 5))  # a stray size-one stride
    got_rows, got_column = round_trip([rows, column])  # type: ignore[misc]
    assert got_rows.storage_offset() == 7 and got_rows.stride() == rows.stride()
    assert torch.equal(got_rows, rows)
    assert got_column.stride() == (1, 5) and torch.equal(got_column, column)


def test_a_generator_shared_by_two_rows_stays_one_generator() -> None:
    shared, own = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
    got = round_trip({"a": shared, "b": own, "c": shared})
    assert isinstance(got, dict) and got["a"] is got["c"] and got["a"] is not got["b"]
    assert torch.equal(got["a"].get_state(), shared.get_state())
    with pytest.raises(wire.WireError, match="generator reference"):
        wire.decode({"g": 0}, [])  # no generator was sent before it


def test_a_tensor_whose_bytes_do_not_match_its_shape_is_refused_before_allocation() -> None:
    spec = {"t": [0, "float32", [1000, 1000], "cpu"]}
    with pytest.raises(wire.WireError, match="does not match"):
        wire.decode(spec, [b"\0" * 16])
    with pytest.raises(wire.WireError, match="not allowed"):
        wire.decode({"t": [0, "object", [1], "cpu"]}, [b"\0" * 8])


def record(nodeid: str, outcome: str = "passed", reason: str = "") -> TestResult:
    return TestResult(nodeid, "p19", "p19", "contract", (), outcome, 0.0, reason)  # type: ignore[arg-type]


def test_a_skipped_or_missing_test_counts_as_failed_and_a_declared_skip_does_not() -> None:
    expected = Expected(
        (record("a"), record("b"), record("c"), record("gpu", "skipped", "needs a GPU"))
    )
    reported = [record("a"), record("b", "skipped", "not today"), record("extra")]

    judged = {r.nodeid: r for r in verdicts(expected, reported)}

    assert set(judged) == {"a", "b", "c", "gpu"}  # what the run added is ignored
    assert judged["a"].outcome == "passed"
    assert (
        judged["b"].outcome == "failed" and "skipped in the candidate's run" in judged["b"].reason
    )
    assert (judged["c"].outcome, judged["c"].reason) == ("failed", NOT_REPORTED)
    assert (judged["gpu"].outcome, judged["gpu"].reason) == ("skipped", "needs a GPU")


def test_a_skip_the_reference_makes_too_is_the_environments_not_a_failure() -> None:
    expected = Expected((record("device"), record("b")))
    reported = [record("device", "skipped", "no second device"), record("b", "skipped", "hm")]

    judged = {
        r.nodeid: r
        for r in verdicts(expected, reported, reference_skips={"device": "no second device"})
    }

    assert judged["device"].outcome == "skipped" and "as the reference" in judged["device"].reason
    assert judged["b"].outcome == "failed"  # the reference ran it: the candidate's skip fails


DETACHED = """
import os, time
from pathlib import Path
import pytest

@pytest.mark.extension
@pytest.mark.owner("grading")
def test_leaves_a_daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            Path({pid_file!r}).write_text(str(os.getpid()))
            time.sleep(120)
        os._exit(0)
    time.sleep(0.5)
"""


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def test_a_double_forked_setsid_process_does_not_outlive_its_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "daemon.pid"
    suite = tmp_path / "test_detached.py"
    suite.write_text(DETACHED.format(pid_file=str(pid_file)))

    ForkedRun([str(suite)], {}, ["--timeout=0"]).wait()

    daemon = int(pid_file.read_text())
    assert not _alive(daemon)


def test_a_held_run_imports_no_conftest_until_it_is_released(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "conftest.py").write_text(f"open({str(marker)!r}, 'w').write('yes')\n")
    (tmp_path / "test_held.py").write_text(
        "import pytest\n\n\n@pytest.mark.extension\n@pytest.mark.owner('grading')\n"
        "def test_one():\n    pass\n"
    )

    run = ForkedRun([str(tmp_path)], {}, ["--timeout=0"], hold=True)
    time.sleep(1.5)  # the run is started and waits (a conftest would be imported by now)
    held = not marker.exists() and run.poll() is None
    run.release()
    result = run.wait()

    assert held, "the held run imported its conftest before it was released"
    assert marker.exists() and result.returncode == 0


def test_the_checkout_guard_puts_back_what_a_submission_changed(tmp_path: Path) -> None:
    tests = tmp_path / "packages" / "x" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_x.py").write_text("def test_x(): assert False\n")
    guard = CheckoutGuard(tmp_path)
    (tests / "test_x.py").write_text("def test_x(): pass\n")
    (tests / "conftest.py").write_text("# a force-pass hook\n")

    changed = guard.restore()

    assert changed == ["packages/x/tests/conftest.py", "packages/x/tests/test_x.py"]
    assert (tests / "test_x.py").read_text() == "def test_x(): assert False\n"
    assert not (tests / "conftest.py").exists() and guard.restore() == []


CANDIDATE = """
import torch

def double(x):
    return x * 2

def scale_in_place(x, factor):
    x.mul_(factor)

def add_through_data(x):
    x.data.add_(1)  # .data has a version counter of its own: x's stays as it was

def fill_through_storage(x):
    over = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage(), x.storage_offset(), x.shape)
    over.fill_(7)  # another tensor over x's memory: x's version counter stays as it was

def modes():
    return torch.is_grad_enabled(), torch.is_inference_mode_enabled()

def scale_under_inference_mode(x, factor):
    if not x.is_inference():
        raise ValueError("x must be an inference tensor")
    with torch.inference_mode():
        x.mul_(factor)

def reach():
    import gptlab_testkit

def drive(model, x):
    return model(x) + 1

def rewrite(model):
    model.load_state_dict({"weight": model.weight * 0})

def settle(model, *calls):
    for name, args in calls:
        getattr(model, name)(*args)
    return model(torch.ones(1, 3))

def peek(model, *names):
    for name in names:
        model = getattr(model, name)
    return model

def fill_through(fill, x):
    fill(x)
    return x.clone()

def give_back(thing):
    return thing

class Counter:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1
        return self.n

def count_through(counter, hook):
    hook(counter)
    return counter.n

def countdown(n):
    while n:
        yield n
        n -= 1
"""


@pytest.fixture
def worker(tmp_path: Path):  # type: ignore[no-untyped-def]
    _, worker = candidate_module(tmp_path, "DRILL_P19_MODULE", CANDIDATE)
    yield worker
    worker.stop()


def call(worker: Worker, name: str, *args: object) -> object:
    from gptlab_testkit.judge.client import _call

    return _call(worker, None, name, args, {})


def test_a_candidate_runs_in_the_worker_and_answers_with_values(worker: Worker) -> None:
    x = torch.arange(4.0)
    got = call(worker, "double", x)
    assert isinstance(got, torch.Tensor) and torch.equal(got, x * 2)
    assert worker.process is not None and worker.process.pid != os.getpid()


def test_an_in_place_write_in_the_worker_is_seen_in_the_judges_tensor(worker: Worker) -> None:
    x = torch.ones(3)
    call(worker, "scale_in_place", x, 3.0)
    assert torch.equal(x, torch.full((3,), 3.0))


def test_a_write_that_leaves_the_version_counter_as_it_was_is_seen(worker: Worker) -> None:
    x, y = torch.ones(3), torch.ones(2, 2)
    call(worker, "add_through_data", x)
    call(worker, "fill_through_storage", y)
    assert torch.equal(x, torch.full((3,), 2.0)) and torch.equal(y, torch.full((2, 2), 7.0))


def test_an_argument_the_call_left_as_it_was_comes_back_without_its_bytes(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gptlab_testkit.judge.worker_facts import storage

    answers: list[tuple[dict[str, object], list[bytes]]] = []
    receive = wire.receive

    def recorded(fd: int, deadline: float | None = None) -> tuple[dict[str, object], list[bytes]]:
        answers.append(receive(fd, deadline))
        return answers[-1]

    monkeypatch.setattr(wire, "receive", recorded)
    x, y = torch.arange(4.0), torch.ones(3)
    call(worker, "double", x)
    call(worker, "scale_in_place", y, 2.0)
    (kept, kept_blobs), (written, _) = answers
    assert wire.read_unchanged(kept["after"][0]) is not None  # type: ignore[index]
    assert len(kept_blobs) == 1  # the result's bytes only
    assert wire.read_unchanged(written["after"][0]) is None  # type: ignore[index]
    assert torch.equal(y, torch.full((3,), 2.0))
    assert storage(x)[0] == "worker"  # the worker's copy's facts came all the same


def test_an_inference_tensor_is_one_in_the_worker_and_its_write_comes_back(worker: Worker) -> None:
    with torch.inference_mode():
        x = torch.ones(3)
    call(worker, "scale_under_inference_mode", x, 2.0)
    assert x.is_inference() and torch.equal(x, torch.full((3,), 2.0))
    with pytest.raises(ValueError, match="inference tensor"):
        call(worker, "scale_under_inference_mode", torch.ones(3), 2.0)


def test_the_call_runs_under_the_judges_grad_and_inference_modes(worker: Worker) -> None:
    assert call(worker, "modes") == (True, False)
    with torch.no_grad():
        assert call(worker, "modes") == (False, False)
    with torch.inference_mode():
        assert call(worker, "modes") == (False, True)
        with torch.inference_mode():
            x = torch.ones(3)
        call(worker, "scale_in_place", x, 2.0)  # an inference tensor written in the mode
    assert torch.equal(x, torch.full((3,), 2.0))


def test_reaching_for_the_testkit_is_a_failure_naming_it(worker: Worker) -> None:
    with pytest.raises(AssertionError, match="reached for gptlab_testkit"):
        call(worker, "reach")


def test_cheats_declare_what_they_try(tmp_path: Path) -> None:
    from gptlab_testkit.audit.cheats import read_cheat

    folder = Path(__file__).parents[3] / "integration_tests" / "cheats"
    cheats = [read_cheat(path) for path in sorted(folder.glob("cheat_*.py"))]
    assert len(cheats) >= 15
    assert all(c.says and c.cheat for c in cheats)
    assert all(c.why for c in cheats if not c.enforced)
    json.dumps([c.cheat for c in cheats])  # plain strings


def test_a_batched_cheat_is_a_submission_named_as_its_variable_expects(tmp_path: Path) -> None:
    from gptlab_testkit.audit.cheats import GRADESCOPE, _submission, read_cheat

    folder = Path(__file__).parents[3] / "integration_tests" / "cheats"
    cheat = read_cheat(folder / "cheat_p19_frame_oracle.py")
    _submission(cheat, tmp_path / "one", folder.parents[1])
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["p19.py"]
    linked = read_cheat(folder / "cheat_p19_links_reference.py")
    _submission(linked, tmp_path / "two", folder.parents[1])
    assert (tmp_path / "two" / "p19.py").is_symlink()
    assert all((folder / name).exists() for name in GRADESCOPE)  # the singly graded ones


def test_a_meta_tensor_keeps_its_strides_and_a_sparse_tensor_its_layout() -> None:
    meta = torch.empty(3, 4, device="meta").t()
    coo = torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    csr = torch.eye(3).to_sparse_csr()
    got_meta, got_coo, got_csr = round_trip([meta, coo, csr])  # type: ignore[misc]
    assert got_meta.device.type == "meta" and got_meta.stride() == (1, 4)
    assert got_coo.layout == torch.sparse_coo and got_coo.is_coalesced()
    assert torch.equal(got_coo.to_dense(), coo.to_dense())
    assert got_csr.layout == torch.sparse_csr and torch.equal(got_csr.to_dense(), torch.eye(3))


def test_a_sparse_tensor_whose_indices_break_its_invariants_is_refused() -> None:
    blobs: list[bytes] = []
    data = wire.encode(torch.eye(2).to_sparse(), blobs)
    indices = torch.tensor([[0, 5], [0, 1]])  # row 5 of a 2x2 tensor
    blobs[data["sp"][1][0][0]] = indices.numpy().tobytes()
    with pytest.raises(wire.WireError, match="sparse"):
        wire.decode(data, blobs)


def test_a_message_of_many_tensors_arrives_whole() -> None:
    parts = [torch.full((1,), float(n)) for n in range(wire.IOV_MAX + 50)]  # two writes
    got = round_trip(parts)
    assert isinstance(got, list) and all(torch.equal(a, b) for a, b in zip(got, parts, strict=True))


# ---- what only the worker can see (worker_facts): kv_cache is judged by these -------------

HOLDER = """
import torch

class Holder:
    def __init__(self):
        self.kept = (torch.zeros(2, 3), torch.zeros(2, 3))

    def replace(self):
        self.kept = (torch.zeros(2, 3), torch.zeros(2, 3))

    def aliases(self, a, b):
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()

    def strides(self, a):
        return list(a.stride())

def move(x):
    x.set_(torch.ones(3))

def pointer(x):
    return x.data_ptr()

def base(x):
    return x.untyped_storage().data_ptr()

import dataclasses

@dataclasses.dataclass
class Out:
    n: int
    t: torch.Tensor

MADE = []

def make(n):
    MADE.append(Out(n, torch.full((2,), float(n))))
    return MADE[-1]

def bump():
    MADE[-1].n += 1

KEPT = {}

def report(n):
    KEPT["n"] = n  # one dict handed out again and again (a shared report)
    return KEPT

def fresh(n):
    return {"n": n}

def leave_grad_on():
    torch.set_grad_enabled(True)

def probe_module(module, x):
    if not isinstance(module, torch.nn.Module):
        raise TypeError("module must be an nn.Module")
    flags = [(m, m.training) for _, m in module.named_modules()]
    module.eval()
    out = module(x)
    for m, flag in flags:
        m.training = flag
    return out.requires_grad, [flag for _, flag in flags]

def backward_through(module, x):
    module(x).sum().backward()

def compiled_twice(fn, x):
    calls = []

    def backend(graph, example_inputs):
        calls.append(1)
        return graph

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=False)
    return compiled(x), compiled(x), len(calls)
"""


def candidate_module(folder: Path, variable: str, source: str):  # type: ignore[no-untyped-def]
    """The module of `source` as a judged candidate for `variable`: (proxy, its worker)."""
    from gptlab_testkit.judge.client import RemoteModule

    path = folder / "attempt.py"
    path.write_text(source)
    worker = Worker(variable, path, timeout_s=60, memory_mib=0)
    worker.start()
    return RemoteModule(worker), worker


@pytest.fixture
def holder(tmp_path: Path):  # type: ignore[no-untyped-def]
    module, worker = candidate_module(tmp_path, "KV_CACHE_MODULE", HOLDER)
    yield module
    worker.stop()


def test_the_worker_reports_whether_its_tensors_are_the_same_objects(holder) -> None:  # type: ignore[no-untyped-def]
    from gptlab_testkit.judge.worker_facts import data_ptr, same_objects, worker_reported

    cache = holder.Holder()
    before = cache.kept
    assert same_objects(cache.kept, before) and worker_reported(before) == " (worker-reported)"
    assert [data_ptr(t) for t in cache.kept] == [data_ptr(t) for t in before]
    cache.replace()
    assert not same_objects(cache.kept, before)
    assert [data_ptr(t) for t in cache.kept] != [data_ptr(t) for t in before]


def test_a_view_of_a_returned_tensor_goes_back_as_the_same_memory(holder) -> None:  # type: ignore[no-untyped-def]
    cache = holder.Holder()
    key = cache.kept[0]
    assert cache.aliases(key[:, 1:], key)  # both views of the worker's tensor
    assert not cache.aliases(key.clone(), key)
    x = torch.arange(6.0).reshape(2, 3)
    assert cache.aliases(x, x[1:]) and not cache.aliases(x, x.clone())  # the judge's sharing
    assert cache.strides(torch.zeros(3, 1).expand(3, 4)) == [1, 0]  # an expanded layout


def test_a_pointer_the_candidate_reports_is_read_as_the_judges_address(holder) -> None:  # type: ignore[no-untyped-def]
    from gptlab_testkit.judge.worker_facts import judge_address

    x = torch.arange(24.0).reshape(4, 6)
    view = x[1:, 2:]  # 8 elements in: the worker's copy keeps the offset
    assert judge_address(holder.pointer(view)) == view.data_ptr()
    assert judge_address(holder.base(view)) == x.data_ptr()  # the storage's start
    reported = holder.pointer(x.clone())
    assert judge_address(reported) != x.data_ptr()  # a clone's memory is its own
    holder.pointer(x)
    assert judge_address(reported) == reported  # outside the last call's copies: as it is
    assert judge_address(True) is True and judge_address(3.5) == 3.5


def test_a_returned_dataclass_is_read_without_a_round_trip_until_the_worker_runs(holder) -> None:  # type: ignore[no-untyped-def]
    out = holder.make(3)
    worker = holder._worker
    sent = worker.exchanges
    assert out.n == 3 and torch.equal(out.t, torch.full((2,), 3.0))
    assert worker.exchanges == sent  # the fields came with the call's answer
    holder.bump()
    assert out.n == 4  # the worker ran code since: read again


def test_a_list_or_dict_a_call_returns_keeps_the_workers_identity(holder) -> None:  # type: ignore[no-untyped-def]
    from gptlab_testkit.judge.worker_facts import identity, worker_reported

    first, second = holder.report(1), holder.report(2)
    assert first is not second and identity(first) == identity(second)  # one object there
    assert worker_reported(first) == " (worker-reported)"
    assert identity(holder.fresh(1)) != identity(holder.fresh(1))


def test_grad_mode_a_candidate_leaves_switched_is_left_switched_here(holder) -> None:  # type: ignore[no-untyped-def]
    with torch.no_grad():
        holder.leave_grad_on()
        assert torch.is_grad_enabled(), "the candidate's switch did not reach the judge"


class _Probed(torch.nn.Module):  # the test's own module: its mode is the candidate's to switch
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.linear(x))


def test_a_tests_own_module_is_an_nn_module_there_whose_modes_may_be_switched(holder) -> None:  # type: ignore[no-untyped-def]
    module = _Probed().train()
    module.drop.eval()  # mixed flags: each one must come back

    records, flags = holder.probe_module(module, torch.ones(1, 3))

    assert records is True and flags == [True, True, False]
    assert [m.training for m in module.modules()] == [True, True, False]


def test_a_backward_through_a_tests_module_output_reaches_its_parameters(holder) -> None:  # type: ignore[no-untyped-def]
    module = _Probed().eval()
    holder.backward_through(module, torch.ones(1, 3))
    assert module.linear.weight.grad is not None  # as in one process: a .grad was left


def test_a_reference_models_mode_stays_out_of_reach(holder) -> None:  # type: ignore[no-untyped-def]
    reference = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Dropout(0.5)).train()
    with pytest.raises(AttributeError, match="cannot be changed"):
        holder.probe_module(reference, torch.ones(1, 3))
    assert reference.training


class _Wrapping(torch.nn.Module):  # a test's recorder around a reference model
    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


REFERENCE_LIKE = """
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x)
"""


def test_a_tests_wrapper_around_a_reference_model_keeps_its_mode_out_of_reach(
    holder,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    package = types.ModuleType("reference_like")  # a package's model: not a test's, not torch's
    package.__file__ = "/site-packages/reference_like/model.py"
    exec(REFERENCE_LIKE, package.__dict__)
    monkeypatch.setitem(sys.modules, "reference_like", package)
    package.Model.__module__ = "reference_like"
    wrapper = _Wrapping(package.Model()).train()
    with pytest.raises(AttributeError, match="cannot be changed"):
        holder.probe_module(wrapper, torch.ones(1, 3))
    assert wrapper.training and wrapper.inner.training


def _pure(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 2


def test_a_pure_test_function_travels_as_source_and_compiles_in_the_worker(holder) -> None:  # type: ignore[no-untyped-def]
    from gptlab_testkit.judge.shipping import as_source

    x = torch.linspace(0, 1, 4)
    first, second, compilations = holder.compiled_twice(_pure, x)
    assert torch.allclose(first, _pure(x)) and torch.allclose(second, _pure(x))
    assert compilations == 1  # traced once, reused: a real function there, not a stand-in
    assert as_source(_pure) is not None
    assert as_source(holder_state_reader) is None  # it reads the test's state: lent


SEEN: list[int] = []


def holder_state_reader(x: torch.Tensor) -> torch.Tensor:
    SEEN.append(1)
    return x


def test_an_argument_moved_to_other_memory_is_moved_in_the_judge_too(holder) -> None:  # type: ignore[no-untyped-def]
    x = torch.zeros(3)
    pointer = x.data_ptr()
    holder.move(x)
    assert torch.equal(x, torch.ones(3)) and x.data_ptr() != pointer


REALLOCATING_RESET = """
import torch

class KVCache:
    def __init__(self, layers, batch, heads, capacity, head_dim, *, dtype=torch.float32,
                 device="cpu", start_positions=None):
        self.shape = (batch, heads, capacity, head_dim)
        self.storage = tuple((torch.zeros(self.shape), torch.zeros(self.shape))
                             for _ in range(layers))

    def append(self, past_key_values, positions):
        pass

    def reset(self, start_positions=None):
        self.storage = tuple((torch.zeros(self.shape), torch.zeros(self.shape))
                             for _ in self.storage)

def append_kv_cache(*args):
    pass
"""


def test_a_cache_whose_reset_replaces_its_storage_fails_as_worker_reported(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "attempt.py"
    path.write_text(REALLOCATING_RESET)
    suite = Path(__file__).parents[2] / "kv_cache" / "tests" / "test_kv_cache_lifecycle.py"
    test = f"{suite}::test_reset_keeps_storage_and_hides_old_tokens"
    env = {**os.environ, "KV_CACHE_MODULE": str(path), "GPTLAB_JUDGE": "default"}
    env.pop("GPTLAB_JUDGE_TRUSTED", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", test],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-2000:]
    assert "reset rebound the storage (worker-reported)" in run.stdout


def test_a_forked_test_process_gets_a_fork_of_its_parents_worker(worker: Worker) -> None:
    zygote = worker.process.pid if worker.process else 0
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the forked test process: its worker is a fork of the zygote
        answer = b"?"
        try:
            got = call(worker, "double", torch.arange(3.0))
            mine = worker.process.pid if worker.process else 0
            fine = isinstance(got, torch.Tensor) and torch.equal(got, torch.arange(3.0) * 2)
            answer = b"forked" if fine and mine not in (0, zygote) and worker.zygote else b"afresh"
            worker.stop()
        finally:
            os.write(write, answer)
            os._exit(0)
    os.close(write)
    answer = os.read(read, 16)
    os.waitpid(child, 0)
    os.close(read)
    assert answer == b"forked"
    assert call(worker, "double", torch.ones(1)) == torch.full((1,), 2.0)  # the zygote still serves


def test_a_model_lent_to_the_candidate_runs_in_the_judge(worker: Worker) -> None:
    model = torch.nn.Linear(3, 2)
    seen: list[tuple[int, ...]] = []
    model.register_forward_hook(lambda _m, args, _out: seen.append(tuple(args[0].shape)))
    x = torch.randn(4, 3)
    got = call(worker, "drive", model, x)
    with torch.no_grad():
        assert torch.equal(got, model(x) + 1)
    assert seen[0] == (4, 3)  # the judge saw the call the candidate made


def test_a_lent_model_cannot_be_changed_or_opened(worker: Worker) -> None:
    model = torch.nn.Linear(3, 2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(AttributeError, match="cannot be changed"):
        call(worker, "rewrite", model)
    for names in (["_parameters"], ["forward", "__globals__"], ["forward", "__self__"]):
        with pytest.raises(AttributeError, match="public names"):
            call(worker, "peek", model, *names)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    holder = types.SimpleNamespace(os=os, setattr=setattr)
    for name in ("os", "setattr"):  # a module or a builtin would act in the judge
        with pytest.raises(TypeError, match="out of the candidate's reach"):
            call(worker, "peek", holder, name)


def test_a_lent_callables_in_place_write_reaches_the_candidates_tensor(worker: Worker) -> None:
    got = call(worker, "fill_through", lambda x: x.fill_(7.0), torch.zeros(3))
    assert torch.equal(got, torch.full((3,), 7.0))


def test_a_lent_object_comes_back_as_itself_and_a_handle_as_the_workers_object(
    worker: Worker,
) -> None:
    recorder = object.__new__(type("Recorder", (), {}))
    assert call(worker, "give_back", recorder) is recorder
    counter = call(worker, "Counter")
    # the judge's callable calls the candidate's object while the worker waits on it
    assert call(worker, "count_through", counter, lambda c: c.bump()) == 1
    assert call(worker, "give_back", counter).bump() == 2


def test_a_candidates_generator_is_stepped_in_the_worker(worker: Worker) -> None:
    assert list(call(worker, "countdown", 3)) == [3, 2, 1]  # type: ignore[call-overload]


def test_a_sweep_spares_every_descendant_of_a_live_run_however_deep() -> None:
    """A class run's sweep after one submission must not touch the other's tree: the
    keeper's grandchildren (a test process, a candidate's worker) are spared too."""
    from gptlab_testkit.judge.reaper import _ancestry

    me, keeper, run, worker, forked = 1, 10, 11, 12, 13
    parents = {keeper: me, run: keeper, worker: run, forked: worker, 99: me}
    assert _ancestry(forked, parents, me) == [worker, run, keeper]
    assert _ancestry(run, parents, me) == [keeper]
    assert _ancestry(99, parents, me) == []
    assert _ancestry(5, {5: 6, 6: 5}, me) == [6, 5]  # a loop in a racy read ends


def test_a_named_tuple_keeps_its_name_and_fields_across_the_wire() -> None:
    from collections import namedtuple

    Record = namedtuple("Record", ["emitted", "steps"])
    got = round_trip([Record({1: 2}, (3, torch.ones(2)))])
    assert isinstance(got, list) and type(got[0]).__name__ == "Record"
    assert got[0].emitted == {1: 2} and torch.equal(got[0].steps[1], torch.ones(2))
    with pytest.raises(wire.WireError, match="named tuple"):  # only identifiers are built
        wire.decode({"NT": ["Record", ["a b"], [1]]}, [])
    # what load_state_dict returns: a private type's name, public fields
    keys = torch.nn.Linear(2, 2).load_state_dict(torch.nn.Linear(2, 2).state_dict())
    assert round_trip(keys) == ([], []) and type(round_trip(keys)).__name__ == "_IncompatibleKeys"


def test_a_lent_model_takes_a_call_that_changes_nothing_and_refuses_one_that_would(
    worker: Worker,
) -> None:
    model = torch.nn.Linear(3, 2).eval()
    unchanged = [("eval", ()), ("train", (False,)), ("to", ("cpu",)), ("to", (torch.float32,))]
    call(worker, "settle", model, *unchanged)
    for change in [("train", ()), ("to", (torch.float64,))]:
        with pytest.raises(AttributeError, match="cannot be changed"):
            call(worker, "settle", model, change)
    assert not model.training and model.weight.dtype == torch.float32


MODELISH = """
import dataclasses

import torch
from torch import nn


@dataclasses.dataclass(frozen=True)
class Config:
    width: int = 3
    scale: float = 1.0

    def __post_init__(self):
        if self.width < 1:
            raise ValueError(f"width {self.width} is not positive")


class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.proj = nn.Linear(config.width, config.width, bias=False)
        self.head = nn.Linear(config.width, config.width, bias=False)
        self.head.weight = self.proj.weight  # tied

    def forward(self, x):
        return self.head(torch.tanh(self.proj(x)))


class Other:
    pass


def noise(n):
    return torch.rand(n)


class Engine:
    def __init__(self):
        self.steps = 0

    def step(self):
        self.steps += 1
        return self.steps

    def run(self, n):
        return [self.step() for _ in range(n)]
"""


@pytest.fixture
def modelish(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "model").mkdir()  # its own folder: a fixture's worker beside it has another
    module, worker = candidate_module(tmp_path / "model", "TINY_GPT_MODULE", MODELISH)
    yield module
    worker.stop()


def test_a_candidates_class_is_a_type_here_and_its_dataclass_works_as_one(modelish) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    Config = modelish.Config
    config = Config(width=2)
    assert isinstance(config, Config) and not isinstance(modelish.Other(), Config)
    assert isinstance(modelish.Net(config).config, Config)  # the worker names its class
    assert [(f.name, f.default) for f in dataclasses.fields(Config)] == [
        ("width", 3),
        ("scale", 1.0),
    ]
    assert dataclasses.asdict(config) == {"width": 2, "scale": 1.0}
    assert dataclasses.replace(config, scale=2.0).scale == 2.0 and config.scale == 1.0
    assert config == Config(width=2) and config != Config(width=3)
    with pytest.raises(ValueError, match="width 0"):  # replace validates again, there
        dataclasses.replace(config, width=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.width = 4  # type: ignore[misc]
    assert config.width == 2


def test_a_parameter_the_test_assigns_or_writes_is_the_modules_there(modelish) -> None:  # type: ignore[no-untyped-def]
    import copy

    from gptlab_testkit.judge.worker_facts import identity

    net = modelish.Net(modelish.Config())
    twin = copy.deepcopy(net)  # a new object in the worker
    with torch.no_grad():
        net.proj.weight -= net.proj.weight  # written in place: still tied, now zero
    assert identity(net.head.weight) == identity(net.proj.weight)
    assert torch.equal(net(torch.ones(1, 3)), torch.zeros(1, 3))
    assert not torch.equal(twin(torch.ones(1, 3)), torch.zeros(1, 3))
    twin.head.weight = torch.nn.Parameter(torch.eye(3))  # a new parameter: the tie is cut
    assert identity(twin.head.weight) != identity(twin.proj.weight)
    assert torch.equal(twin.head.weight, torch.eye(3))


def test_the_tests_seed_seeds_the_candidates_draws_and_they_advance_its_stream(
    modelish,  # type: ignore[no-untyped-def]
) -> None:
    torch.manual_seed(3)
    drawn, after = modelish.noise(4), torch.rand(2)
    torch.manual_seed(3)
    assert torch.equal(drawn, torch.rand(4)) and torch.equal(after, torch.rand(2))


def test_a_backward_goes_through_the_candidates_call_into_the_tests_tensors(modelish) -> None:  # type: ignore[no-untyped-def]
    net = modelish.Net(modelish.Config())
    weight = net.proj.weight.detach().clone().requires_grad_()
    x = torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
    twice = x * 2  # the test's own graph, before and after the candidate's call
    (net(twice) ** 2).sum().backward()
    mine = x.detach().clone().requires_grad_()
    ((torch.tanh(mine * 2 @ weight.T) @ weight.T) ** 2).sum().backward()
    assert x.grad is not None and torch.allclose(x.grad, mine.grad)  # type: ignore[arg-type]
    assert torch.allclose(net.proj.weight.grad, weight.grad)  # both uses of the tied weight


def test_a_method_the_test_wraps_is_wrapped_in_the_worker_and_unwrapped_again(modelish) -> None:  # type: ignore[no-untyped-def]
    engine = modelish.Engine()
    original = engine.step  # read before the wrapper: it stays the class's method
    calls: list[int] = []

    def counted() -> object:
        calls.append(1)
        return original()

    engine.step = counted  # the engine's own loop now meets the wrapper (lent to it)
    assert engine.run(2) == [1, 2] and len(calls) == 2
    del engine.step
    assert engine.run(1) == [3] and len(calls) == 2 and engine.step() == 4


def test_a_write_into_a_workers_tensor_waits_for_that_workers_next_call(
    worker: Worker,
    modelish,  # type: ignore[no-untyped-def]
) -> None:
    net = modelish.Net(modelish.Config())
    with torch.no_grad():
        for parameter in net.parameters():  # a module's walk: its items in one message
            parameter.zero_()
    assert torch.equal(call(worker, "double", torch.ones(2)), torch.full((2,), 2.0))  # type: ignore[arg-type]
    assert torch.equal(net(torch.ones(1, 3)), torch.zeros(1, 3))


RANK = """
import torch
import torch.distributed as dist

def reduce_and_leave(x):
    dist.all_reduce(x)
    dist.all_gather_into_tensor(torch.empty(2), x, async_op=True)  # never waited
    return dist.get_world_size()
"""


def test_a_judged_rank_joins_its_group_in_the_worker_and_the_record_is_worker_reported(
    tmp_path: Path,
) -> None:
    import torch.distributed as dist

    from gptlab_testkit.judge import ranks

    module, worker = candidate_module(tmp_path, "DRILL_P28_MODULE", RANK)
    store = dist.TCPStore("127.0.0.1", 0, 2, True, wait_for_workers=False)  # us + one rank
    heard: list[tuple[str, str]] = []
    try:
        rank = ranks.join(module, 0, 1, store.port, 2.0, 5.0, lambda *c: heard.append(c))
        x = torch.ones(2)
        assert module.reduce_and_leave(x) == 1  # a world of one, joined in the worker
        assert not dist.is_initialized(), "the judge joined no group"
        calls, unwaited = rank.take()
        assert (
            calls
            == heard
            == [
                ("all_reduce", "float32 [2]"),
                ("all_gather_into_tensor", "float32 [2], float32 [2]"),
            ]
        )
        assert unwaited == ["all_gather_into_tensor (collective #2)"]
        assert rank.reported == " (worker-reported)"
        assert rank.take() == ([], [])  # each take is the record since the last one
        group = ranks.torch_beside(module, "torch.distributed")
        assert group.get_world_size() == 1  # the job's own calls: the worker's group too
    finally:
        worker.stop()


def test_the_worker_names_only_torch_modules_and_says_collectives_only_in_a_group(
    worker: Worker,
) -> None:
    from gptlab_testkit.judge import ranks

    with pytest.raises(ValueError, match="name must be a module of torch's, got 'os'"):
        ranks.torch_beside(object(), "os")
    assert ranks.torch_beside(object(), "torch.distributed") is torch.distributed
    with pytest.raises(ValueError, match="a module of torch's"):  # asked of the worker itself
        worker.request({"op": "getattr", "handle": None, "module": "os", "name": "getcwd"}, [])
    with pytest.raises(wire.WireError, match="from a worker in no group"):
        worker._entered(["all_reduce", "float32 [2]"])
    worker.on_entered = lambda *call: None
    with pytest.raises(wire.WireError, match="malformed collective"):
        worker._entered(["all_reduce", 3])


def test_workers_that_start_alike_are_forks_of_one_interpreter_and_leave_no_zombie(
    tmp_path: Path,
) -> None:
    from gptlab_testkit.judge import client

    files = {"DRILL_P05_MODULE": "p05_attempt.py", "DRILL_P06_MODULE": "p06_attempt.py"}
    for variable, name in files.items():  # two drills: the same refused modules and roots
        (tmp_path / name).write_text(f"def which():\n    return {variable!r}\n")
    judged = [(variable, str(tmp_path / name)) for variable, name in files.items()]
    client.spawn_early(judged)
    modules = [client.remote_module(variable, spec) for variable, spec in judged]
    workers = [module._worker for module in modules]
    shared = [w for w in client._WORKERS if w.process is not None and not w.names]
    try:
        assert [module.which() for module in modules] == list(files)  # each its own file
        assert workers[0].zygote == workers[1].zygote and workers[0].zygote is not None
        assert all(isinstance(worker.process, client._Forked) for worker in workers)
        (zygote,) = [w for w in shared if w.process.pid == workers[0].zygote[2]]  # type: ignore[union-attr,index]
        zygote.stop()  # its forks are now ours (a subreaper): stopping one reaps it
        pid = workers[0].process.pid  # type: ignore[union-attr]
        workers[0].stop()
        assert not Path(f"/proc/{pid}").exists(), "a stopped worker was left a zombie"
    finally:
        for worker in [*workers, *shared]:
            worker.stop()


@pytest.mark.parametrize(
    "reported",
    [
        None,
        [{"kernel": "k", "grid": [1, 1], "ints": {}}],  # two cells, not three
        [{"kernel": "k", "grid": [1, -1, 1], "ints": {}}],
        [{"kernel": "k", "grid": [1, 1, 1], "ints": {"n": True}}],
        [{"kernel": 3, "grid": [1, 1, 1], "ints": {}}],
    ],
)
def test_a_workers_launch_records_are_refused_unless_well_formed(reported: object) -> None:
    from gptlab_testkit.judge.client import _launches

    good = [{"kernel": "k", "grid": [4, 1, 1], "ints": {"n": 1000, "BLOCK": 256}}]
    assert _launches(good) == good
    with pytest.raises(wire.WireError, match="malformed launch records"):
        _launches(reported)
