"""Build and load the fake CUDA device (``fake_cuda.cpp``) — before ``import torch``.

A CPU-only torch wheel can create ``FakeTensor``s on device ``cuda`` but aborts as soon as
autograd, autocast or an optimizer asks the device guard about them. ``fake_cuda.cpp``
registers torch's own no-op ``FakeGuardImpl`` for CUDA and CUDA hooks that report one
device; no CUDA call is ever made. It is compiled once with ``g++`` against the installed
wheel's headers (found without importing torch) into the user's cache folder and loaded
with ``ctypes``. It must be loaded before torch is imported: torch decides its
accelerator at import time.

:func:`prepare` decides which device a profile measures on, without importing torch:

- a CUDA build of torch on a machine with a GPU needs no shim (fake tensors on ``cuda``
  work natively);
- a CPU build, or a CUDA build where no GPU is visible (its own CUDA hooks then answer
  "no device" and abort autograd on fake CUDA tensors), gets the shim when ``g++`` is
  there and the wheel ships its headers; on a CUDA build the shim's guard replaces the
  wheel's after ``import torch`` (:func:`load`, ``fake_cuda.cpp``);
- otherwise the profile measures on a fake ``cpu`` device and says so (PyTorch picks
  different kernels by device: autocast op lists, ``foreach`` optimizers, SDPA kernels).
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "fake_cuda.cpp"

__all__ = ["DeviceSetup", "build", "cache_dir", "gpu_visible", "load", "prepare", "torch_dir"]


@dataclass(frozen=True)
class DeviceSetup:
    """The device a profile measures on, and why."""

    device: str  # "cuda" or "cpu"
    how: str  # "native", "shim", "fallback"
    note: str = ""


def torch_dir() -> Path:
    """The installed torch package's folder, found without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "torch is not installed in this interpreter: "
            'pip install "torchward[profile]" (or any torch >= 2.5)'
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _cuda_build(folder: Path) -> bool:
    """Whether the wheel is a CUDA build (``torch/version.py`` names a CUDA version)."""
    try:
        text = (folder / "version.py").read_text("utf-8")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("cuda"):
            return "None" not in line
    return False


def gpu_visible() -> bool:
    """Whether this process can see an NVIDIA GPU, told without importing torch (the
    driver's device nodes; ``CUDA_VISIBLE_DEVICES`` empty or ``-1`` hides them all)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return Path("/dev/nvidiactl").exists() or Path("/dev/dxg").exists()


def cache_dir() -> Path:
    """``$TORCHWARD_BUILD_DIR`` or ``$XDG_CACHE_HOME/torchward`` or ``~/.cache/torchward``."""
    base = os.environ.get("TORCHWARD_BUILD_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or Path.home() / ".cache") / "torchward"


def build(folder: Path | None = None) -> Path:
    """Compile the shim for the installed wheel (once; the file name hashes source + wheel)."""
    folder = folder or torch_dir()
    key = hashlib.sha256(SOURCE.read_bytes() + str(folder).encode()).hexdigest()[:12]
    out = cache_dir() / "fakecuda" / f"libfake_cuda-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    lib = folder / "lib"
    partial = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = [
        shutil.which("g++") or "g++",
        "-O1",
        "-shared",
        "-fPIC",
        "-std=c++20",  # torch 2.14's headers need C++20 (std::strong_ordering)
        "-D_GLIBCXX_USE_CXX11_ABI=1",
        f"-I{folder / 'include'}",
        str(SOURCE),
        f"-L{lib}",
        "-lc10",
        "-ltorch_cpu",
        f"-Wl,-rpath,{lib}",
        "-o",
        str(partial),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"building the fake CUDA device failed: {proc.stderr[-1500:]}")
    os.replace(partial, out)  # atomic: a concurrent build never loads half a file
    return out


_LOADED: dict[str, DeviceSetup] = {}


def load(cuda_build: bool = False) -> Path:
    """Build (if needed) and load the shim; raises when torch is already imported.

    ``cuda_build``: the wheel registers its own CUDA guard when torch loads, so torch is
    imported here and the shim's guard put back in its place."""
    if "torch" in sys.modules:
        raise RuntimeError("the fake CUDA device must be loaded before `import torch`")
    path = build()
    library = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    if cuda_build:
        # the wheel's CUDA hooks, skipped for the shim's, say so on the C stderr: not for users
        saved = os.dup(2)
        try:
            with open(os.devnull, "wb") as null:
                os.dup2(null.fileno(), 2)
                import torch  # noqa: F401  (the wheel's CUDA guard registers itself now)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        library.torchward_install_fake_guard()
    return path


def prepare() -> DeviceSetup:
    """Choose (and set up) the measuring device; call before ``import torch``."""
    if "setup" in _LOADED:
        return _LOADED["setup"]
    folder = torch_dir()
    cuda_build = _cuda_build(folder)
    if cuda_build and gpu_visible():
        setup = DeviceSetup("cuda", "native")
    elif "torch" in sys.modules:
        setup = DeviceSetup(
            "cpu",
            "fallback",
            "measured on a fake cpu device: torch was imported before the fake CUDA device "
            "could be loaded (CUDA kernel choices are not reproduced)",
        )
    elif shutil.which("g++") is None or not (folder / "include").is_dir():
        setup = DeviceSetup(
            "cpu",
            "fallback",
            "measured on a fake cpu device: building the fake CUDA device needs g++ and "
            "torch's headers (CUDA kernel choices are not reproduced)",
        )
    else:
        try:
            load(cuda_build)
            setup = DeviceSetup("cuda", "shim")
        except (OSError, RuntimeError, AttributeError) as error:
            setup = DeviceSetup(
                "cpu", "fallback", f"measured on a fake cpu device: {str(error)[:300]}"
            )
    _LOADED["setup"] = setup
    return setup
