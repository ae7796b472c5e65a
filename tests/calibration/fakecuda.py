"""Build and load the fake CUDA device — before ``import torch``.

The shim and its builder ship in the profile extra (``torchward/profile/fake_cuda.cpp``,
``torchward/profile/fakecuda.py``): this harness uses them. ``load()`` compiles the
extension with ``g++`` against the installed torch wheel's headers (found without
importing torch) into the user's cache folder (``$TORCHWARD_BUILD_DIR`` or
``~/.cache/torchward/fakecuda``) once, then ``ctypes``-loads it. It must run before torch
is imported: torch decides its accelerator at import time. Returns the path of the
loaded library.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parents[2])
)  # the calibration venv has no torchward

from torchward.profile.fakecuda import build, load  # noqa: E402

__all__ = ["build", "load"]
