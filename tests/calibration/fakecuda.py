"""Build and load the fake CUDA device (``fake_cuda.cpp``) — before ``import torch``.

``load()`` compiles the extension with ``g++`` against the installed torch wheel's headers
(found without importing torch) into ``tests/calibration/build/`` (git-ignored) once, then
``ctypes``-loads it. It must run before torch is imported: torch decides its accelerator
at import time. Returns the path of the loaded library.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "fake_cuda.cpp"


def _torch_dir() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("torch is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def build() -> Path:
    torch_dir = _torch_dir()
    key = hashlib.sha256(SOURCE.read_bytes() + str(torch_dir).encode()).hexdigest()[:12]
    out = HERE / "build" / f"libfake_cuda-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    lib = torch_dir / "lib"
    cmd = [
        "g++",
        "-O1",
        "-shared",
        "-fPIC",
        "-std=c++17",
        "-D_GLIBCXX_USE_CXX11_ABI=1",
        f"-I{torch_dir / 'include'}",
        str(SOURCE),
        f"-L{lib}",
        "-lc10",
        "-ltorch_cpu",
        f"-Wl,-rpath,{lib}",
        "-o",
        str(out),
    ]
    subprocess.run(cmd, check=True)
    return out


def load() -> Path:
    if "torch" in sys.modules:
        raise RuntimeError("fakecuda.load() must run before `import torch`")
    path = build()
    ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return path
