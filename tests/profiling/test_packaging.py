"""The ``profile`` extra never forces the CUDA build of torch on a machine without a GPU.

PyPI's torch for Linux is the multi-GB CUDA build; a laptop's user installs the CPU
build first (README). The extra must then keep it: it asks only for a torch that the CPU
build satisfies, and nothing whose PyPI wheels pin a (CUDA) torch of their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

requirements = pytest.importorskip("packaging.requirements")

ROOT = Path(__file__).resolve().parents[2]
# packages whose PyPI wheels are CUDA builds or pin one
_PULLS_CUDA = ("torchvision", "torchaudio", "timm", "transformers", "triton", "xformers")


def profile_extra() -> list:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    extra = data["project"]["optional-dependencies"]["profile"]
    return [requirements.Requirement(text) for text in extra]


def test_the_extra_asks_for_torch_alone_and_a_cpu_build_satisfies_it():
    extra = profile_extra()
    names = {r.name.lower() for r in extra}
    assert names == {"torch"}
    assert not any(n.startswith("nvidia-") or n in _PULLS_CUDA for n in names)
    (torch,) = extra
    for cpu_build in ("2.5.1+cpu", "2.13.0+cpu", "2.14.1+cpu"):
        assert torch.specifier.contains(cpu_build, prereleases=True), cpu_build


def test_installing_the_extra_keeps_the_torch_already_installed():
    """pip's own resolution, offline: with torch installed (here the CPU wheel), the extra
    installs torchward and nothing else."""
    pytest.importorskip("torch")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--no-build-isolation",
            "--report",
            "-",
            f"{ROOT}[profile]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0 or not done.stdout.strip():
        pytest.skip(f"pip could not resolve here: {done.stderr[-500:]}")
    report = json.loads(done.stdout)
    installed = [item["metadata"]["name"].lower() for item in report["install"]]
    assert installed == ["torchward"], installed
