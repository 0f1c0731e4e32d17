#!/usr/bin/env bash
# One prepared device check, for a session whose task is lent a GPU machine
# (the `device` tool's run verb; under 10 minutes). The machine's python3 already
# holds torch, transformers, pytest, hypothesis and matplotlib, so the packages
# run from source on PYTHONPATH and the plugin is loaded explicitly.
#
#   run: bash bench/gpu_check.sh        (files land in $OUT, or bench/gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/gpu}
mkdir -p "$out"
PYTHONPATH=$(ls -d packages/*/src | paste -sd: -)
export PYTHONPATH GPTLAB_DEVICE=cuda PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())" | tee -a "$out/gpu.txt"
timeout 200 python3 -m pytest packages/*/tests integration_tests -q -p gptlab_testkit.plugin \
    -p no:cacheprovider --tb=line --maxfail=30 2>&1 | tail -60 > "$out/suites.txt"
tail -25 "$out/suites.txt"
# The full benchmark, and a smoke run if it does not finish in time.
timeout 300 python3 -m bench.run --device cuda --out "$out" 2>&1 | tail -15 ||
    timeout 60 python3 -m bench.run --device cuda --quick --out "$out" 2>&1 | tail -15
