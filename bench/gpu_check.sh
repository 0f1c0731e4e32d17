#!/usr/bin/env bash
# One prepared device check, for a session whose task is lent a GPU machine
# (the `device` tool's run verb; about 8 minutes, each step under its own timeout).
# The machine's python3 already holds torch, transformers, pytest, hypothesis and
# matplotlib, so the packages run from source on PYTHONPATH and the plugin is loaded
# explicitly. Covers CUDA graphs for:
#   - the compiled decode (section 7: CompiledDecoder, `reduce-overhead` on CUDA);
#   - the paged path and the engine's decode step (bench.gpu_graphs: the model call
#     of one paged decode step, eager vs replayed from a captured graph);
#   - the engine's whole run on the GPU (section 8, eager, beside transformers).
#
#   run: bash bench/gpu_check.sh        (files land in $OUT, or bench/out/gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/out/gpu}
mkdir -p "$out"
PYTHONPATH=.:$(ls -d packages/*/src | paste -sd: -)
export PYTHONPATH GPTLAB_DEVICE=cuda PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())" | tee -a "$out/gpu.txt"
# 1. CUDA graphs of the paged decode step (about 1 minute).
timeout 90 python3 -m bench.gpu_graphs --out "$out" 2>&1 | tail -12
# 2. Compiled decode with CUDA graphs, and the engine on the GPU (about 5 minutes).
timeout 330 python3 -m bench.run --device cuda --only 7,8 --out "$out" 2>&1 | tail -15 ||
    timeout 60 python3 -m bench.run --device cuda --quick --only 7,8 --out "$out" 2>&1 | tail -15
# 3. The suites on the GPU, as much as the rest of the time allows.
timeout 100 python3 -m pytest packages/*/tests integration_tests -q -p gptlab_testkit.running.plugin \
    -p no:cacheprovider --tb=line --maxfail=30 2>--maxfail=30 -x 2>&11 | tail -60 > "$out/suites.txt"
tail -5 "$out/suites.txt"
