#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/): the zip is unpacked in
# $ROOT/source. It installs the graded packages into $ROOT/venv, so nothing is downloaded
# at grading time.
#
#   AUTOGRADER_ROOT  Gradescope's root (default /autograder; a test stands a folder in)
#   GPTLAB_PYTHON    a Python that already holds the packages (a local try or a test):
#                    no venv is made and nothing is installed; run_autograder uses it too
set -euo pipefail

ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"

if [ -n "${GPTLAB_PYTHON:-}" ]; then
    "$GPTLAB_PYTHON" -W error -c "import gptlab_testkit"
    echo "setup: using $GPTLAB_PYTHON as it is"
    exit 0
fi

# The packages need Python >= 3.11: the image's own python3 when it is recent enough.
python=""
for candidate in python3 python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null 2>&1 &&
        "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        python="$candidate"
        break
    fi
done
if [ -z "$python" ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y python3.11 python3.11-venv
    python=python3.11
fi
if ! "$python" -m venv "$ROOT/venv"; then  # Ubuntu ships venv apart from Python
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$python-venv"
    "$python" -m venv "$ROOT/venv"
fi

pip=("$ROOT/venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" --upgrade pip
# torch's CPU build: Gradescope grades without a GPU, and the default wheel brings
# gigabytes of CUDA libraries.
"${pip[@]}" "torch>=2.4,<2.14" --index-url https://download.pytorch.org/whl/cpu
# Every package the zip holds (build_zip.py chose them), with its test tools.
packages=()
for folder in "$SOURCE"/packages/*/; do
    folder="${folder%/}"
    [ -f "$folder/pyproject.toml" ] || continue
    if [ "$(basename "$folder")" = testkit ]; then
        packages+=("$folder")
    else
        packages+=("$folder[test]")
    fi
done
"${pip[@]}" "${packages[@]}"
# The image is only good if the grader imports without a warning.
"$ROOT/venv/bin/python" -W error -c "import gptlab_testkit, kv_cache"
echo "setup: installed ${#packages[@]} packages into $ROOT/venv"
