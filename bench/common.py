"""What every benchmark section shares: settings, models, timing, progress, machine facts.

Timing rule: the methods a figure compares run interleaved (round-robin), each
round once per method, after one warm-up call each; the figure is the median over
rounds. Methods therefore share the machine's noise (other processes, frequency
changes) instead of each catching its own. On CUDA every timed call is bracketed
by ``torch.cuda.synchronize()``.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # figures go to files; no display is needed or assumed
import matplotlib.pyplot as plt
import torch
from torch import Tensor

from cache_aware_lm import CacheAwareCausalLM
from cache_aware_lm.modern import ModernCacheAwareLM, ModernConfig
from tinygpt import GPTConfig

SEED = 1234


@dataclass(frozen=True)
class Settings:
    device: torch.device
    quick: bool
    out_dir: Path
    repeats: int

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


@dataclass
class Section:
    """One benchmark's results: markdown for the report, its figures and target checks."""

    title: str
    body: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    targets: list[TargetCheck] = field(default_factory=list)


@dataclass(frozen=True)
class TargetCheck:
    name: str
    target: str
    achieved: str
    met: bool | None  # None: not measured in this run
    bound: str = ""  # what limits it, when unmet


# ---- models -------------------------------------------------------------------------------


def modern_config(context_length: int) -> ModernConfig:
    """The benchmark model (Llama-shaped): d_model 256, 4 layers, 4 query / 2 K/V heads."""
    return ModernConfig(
        vocab_size=8192,
        context_length=context_length,
        d_model=256,
        n_layers=4,
        n_heads=4,
        n_kv_heads=2,
        d_ff=768,
    )


def gpt_config(context_length: int) -> GPTConfig:
    """The GPT-2-shaped reference at the same size (fused qkv, learned positions, GELU)."""
    return GPTConfig(
        vocab_size=8192,
        context_length=context_length,
        d_model=256,
        n_layers=4,
        n_heads=4,
        d_ff=1024,
    )


def build_modern(config: ModernConfig, settings: Settings, seed: int = SEED) -> ModernCacheAwareLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ModernCacheAwareLM(config)
    return model.to(settings.device).eval()


def build_reference(config: GPTConfig, settings: Settings, seed: int = SEED) -> CacheAwareCausalLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CacheAwareCausalLM(config)
    return model.to(settings.device).eval()


def truncated_modern(
    target: ModernCacheAwareLM, n_layers: int, settings: Settings
) -> ModernCacheAwareLM:
    """The target's first ``n_layers`` blocks with its embedding, final norm and head.

    A layer-skipping draft: it shares the target's vocabulary and most of its
    prediction path, so (unlike an unrelated small random model) it often agrees.
    """
    config = dataclasses.replace(target.config, n_layers=n_layers)
    draft = ModernCacheAwareLM(config)
    kept = {
        name: tensor
        for name, tensor in target.state_dict().items()
        if not name.startswith("blocks.") or int(name.split(".")[1]) < n_layers
    }
    draft.load_state_dict(kept, strict=True)
    return draft.to(settings.device).eval()


def random_ids(batch: int, length: int, vocab: int, settings: Settings, seed: int) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, length), generator=generator).to(settings.device)


def positions_from(origins: Sequence[int], length: int, settings: Settings) -> Tensor:
    origin_B1 = torch.tensor(list(origins), device=settings.device)[:, None]
    return origin_B1 + torch.arange(length, device=settings.device)


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of every parameter, counting a tied parameter once."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


# ---- timing ---------------------------------------------------------------------------------


def timed(settings: Settings, call: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call, device-synchronised."""
    settings.sync()
    start = time.perf_counter()
    result = call()
    settings.sync()
    return time.perf_counter() - start, result


def interleaved(
    settings: Settings,
    methods: dict[str, Callable[[], Any]],
    repeats: int | None = None,
    warmup: dict[str, Callable[[], Any]] | None = None,
    cpu: dict[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, Any]]:
    """Median seconds per method over ``repeats`` round-robin rounds, and each last result.

    ``cpu``, when given, receives each method's median CPU time of the calling thread
    (``time.thread_time``): on a loaded CPU machine wall time also counts waiting for a
    core, which is no method's work, while the thread's CPU time does not.
    """
    rounds = settings.repeats if repeats is None else repeats
    for name, call in (warmup or methods).items():
        del name
        call()
    samples: dict[str, list[float]] = {name: [] for name in methods}
    cpu_samples: dict[str, list[float]] = {name: [] for name in methods}
    results: dict[str, Any] = {}
    for _ in range(rounds):
        for name, call in methods.items():
            cpu_started = time.thread_time()
            seconds, results[name] = timed(settings, call)
            cpu_samples[name].append(time.thread_time() - cpu_started)
            samples[name].append(seconds)
    if cpu is not None:
        cpu.update({name: statistics.median(times) for name, times in cpu_samples.items()})
    return {name: statistics.median(times) for name, times in samples.items()}, results


def memory_bandwidth(settings: Settings) -> float:
    """Bytes/s of a large tensor copy (read + write counted), median of a few rounds."""
    elements = (64 if settings.quick else 256) * 2**20 // 4  # 64 / 256 MiB of fp32
    source = torch.ones(elements, device=settings.device)
    target = torch.empty_like(source)
    target.copy_(source)
    times = [timed(settings, lambda: target.copy_(source))[0] for _ in range(5)]
    return 2 * source.numel() * source.element_size() / statistics.median(times)


# ---- figures --------------------------------------------------------------------------------


def new_figure(*grid: int, size: tuple[float, float]) -> tuple[Any, Any]:
    """(figure, axes) for one report figure: ``plt.subplots(*grid)`` at ``size`` inches."""
    return plt.subplots(*grid, figsize=size)


def save_figure(figure: Any, path: Path) -> None:
    """Lay out, write at the report's resolution, and free the figure."""
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# ---- progress and machine -----------------------------------------------------------------


class Progress:
    """Printed progress lines: section, step, elapsed seconds (flushed, so logs show them)."""

    def __init__(self, total_sections: int) -> None:
        self.total = total_sections
        self.index = 0
        self.started = time.perf_counter()

    def section(self, title: str) -> None:
        self.index += 1
        self._print(f"[{self.index}/{self.total}] {title}")

    def step(self, what: str) -> None:
        self._print(f"      {what}")

    def _print(self, line: str) -> None:
        print(f"{time.perf_counter() - self.started:7.1f}s {line}", flush=True)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_lines(settings: Settings) -> list[str]:
    lines = [
        f"- CPU: {cpu_model()} ({os.cpu_count()} logical cores visible)",
        f"- torch {torch.__version__}, intra-op threads: {torch.get_num_threads()}",
        f"- device: {settings.device}, dtype float32",
    ]
    if settings.device.type == "cuda":
        lines.append(f"- GPU: {torch.cuda.get_device_name(settings.device)}")
    try:
        import transformers

        lines.append(f"- transformers {transformers.__version__}")
    except ImportError:
        lines.append("- transformers: not installed (its rows are skipped)")
    return lines


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}x"
