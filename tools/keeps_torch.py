"""Installing a gptlab package keeps the torch (and numpy) the environment already has.

    python tools/keeps_torch.py [--torch 2.14.1] [--numpy 1.26.4]

Makes a fresh venv (stdlib `venv`, with pip) that already holds a torch and a numpy of
other versions than the ones this repository's sessions pin, then asks pip what it would
install (`pip install --dry-run --report`) for every package of `packages/` alone and for
all of them together. Any plan that lists torch or numpy fails the check: a package's
metadata would replace the user's own build (a CUDA torch taken away by a CPU one, or a
newer torch by an older one).

The installed torch and numpy are stand-ins: distributions with metadata and no code,
built here as wheels. pip's resolver reads only their names and versions, so the check
costs seconds and no multi-GB download, and it fails the same way a real install would.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"
KEPT = ("torch", "numpy")


def stand_in_wheel(folder: Path, name: str, version: str) -> Path:
    """A wheel of `name` `version` holding only its metadata (no importable code)."""
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: gptlab\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(python), "-m", "pip", "--disable-pip-version-check", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def planned_installs(python: Path, requirements: list[str]) -> dict[str, str]:
    """name -> version of everything pip would install for `requirements`."""
    result = pip(
        python,
        "install",
        "--dry-run",
        "--quiet",
        "--no-build-isolation",  # hatchling is in the venv: no build env per sibling
        "--report",
        "-",
        *requirements,
    )
    if result.returncode != 0:
        raise SystemExit(f"pip could not plan {requirements}:\n{result.stderr[-3000:]}")
    report = json.loads(result.stdout)
    return {
        item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report["install"]
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch", default="2.14.1", help="the torch the user already has")
    parser.add_argument("--numpy", default="1.26.4", help="the numpy the user already has")
    args = parser.parse_args(argv)
    packages = sorted(p.parent for p in PACKAGES.glob("*/pyproject.toml"))
    with tempfile.TemporaryDirectory(prefix="gptlab-keeps-torch-") as scratch:
        folder = Path(scratch)
        subprocess.run([sys.executable, "-m", "venv", str(folder / "venv")], check=True)
        python = folder / "venv" / "bin" / "python"
        wheels = [stand_in_wheel(folder, name, getattr(args, name)) for name in KEPT]
        setup = pip(python, "install", "--quiet", "--no-deps", *map(str, wheels))
        tools = pip(python, "install", "--quiet", "hatchling>=1.21")
        for step in (setup, tools):
            if step.returncode != 0:
                raise SystemExit(step.stderr[-3000:])
        plans = {p.name: [str(p)] for p in packages}
        plans["every package together"] = [str(p) for p in packages]
        replaced = []
        for label, requirements in plans.items():
            plan = planned_installs(python, requirements)
            touched = {name: plan[name] for name in KEPT if name in plan}
            status = f"REPLACES {touched}" if touched else "keeps torch and numpy"
            print(f"{label:<24} {status} ({len(plan)} to install)")
            if touched:
                replaced.append(label)
    if replaced:
        print(f"\nan install would replace the user's torch or numpy: {replaced}", file=sys.stderr)
        return 1
    print(f"\nevery install keeps torch {args.torch} and numpy {args.numpy}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
