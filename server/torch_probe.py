"""Whether torch imports in the interpreter a measurement runs in, and how to install it.

"Measure with your model" runs the user's script with torch in their interpreter
(:mod:`.profiling`). Offered where torch is missing, it failed 0.7 s after the click
(issue 30). So the Measure lens is shown only where torch is importable; elsewhere it
becomes an action that says how to install it — the CPU build on a machine without an
NVIDIA GPU. One place decides, for every client: the lens (generic clients), the
``torchward.installTorch`` command that the lens runs, and the VS Code extension, which
asks the same command before its consent dialog.

The check runs the interpreter with ``importlib.util.find_spec("torch")``: torch is found,
never imported (the server never imports torch). It runs off the event loop, once per
interpreter and again after :data:`RECHECK_S` (someone who installs torch sees the lens
come back) or when the install action is clicked. The lens request awaits the answer
(a few tens of milliseconds the first time), so the first lenses are already right.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Callable

import attrs

RECHECK_S = 60.0
CHECK_TIMEOUT_S = 10.0
_MISSING = 3  # the probe's exit status when torch is not there
_PROBE = (  # without the working directory, which `-c` puts first: a torch.py there is not torch
    "import importlib.util, sys; sys.path = [p for p in sys.path if p not in ('', '.')]; "
    f"sys.exit(0 if importlib.util.find_spec('torch') is not None else {_MISSING})"
)
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@attrs.frozen
class TorchStatus:
    """torch in one interpreter: ``importable`` is None when the interpreter could not
    be asked (it does not start): no judgement, the Measure lens stays."""

    python: str
    importable: bool | None
    install: str  # the command that installs torch there

    def to_wire(self) -> dict[str, object]:
        return {"python": self.python, "importable": self.importable, "command": self.install}


_GPU: list[bool] = []  # has_nvidia_gpu's one answer per process


def has_nvidia_gpu() -> bool:
    """Whether this machine has an NVIDIA GPU that ``nvidia-smi`` lists (asked once)."""
    if not _GPU:
        smi = shutil.which("nvidia-smi")
        found = False
        if smi is not None:
            try:
                found = subprocess.run([smi, "-L"], capture_output=True, timeout=10).returncode == 0
            except (OSError, subprocess.SubprocessError):
                found = False
        _GPU.append(found)
    return _GPU[0]


def install_command(python: str, gpu: bool) -> str:
    """The pip command that installs torch in ``python``: the CPU build without a GPU
    (the default wheel on Linux pulls several GiB of CUDA libraries)."""
    quoted = f'"{python}"' if any(c.isspace() for c in python) else python
    command = f"{quoted} -m pip install torch"
    return command if gpu else f"{command} --index-url {CPU_INDEX}"


def check(python: str) -> TorchStatus:
    """Ask ``python`` whether torch is there (blocking: run it off the event loop)."""
    try:
        code = subprocess.run(
            [python, "-c", _PROBE], capture_output=True, timeout=CHECK_TIMEOUT_S
        ).returncode
        importable = True if code == 0 else False if code == _MISSING else None
    except (OSError, subprocess.SubprocessError):
        importable = None
    return TorchStatus(python, importable, install_command(python, has_nvidia_gpu()))


class TorchProbe:
    """The last answer per interpreter; asked again after :data:`RECHECK_S`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._known: dict[str, tuple[float, TorchStatus]] = {}
        self._asking: dict[str, asyncio.Future[TorchStatus]] = {}

    def known(self, python: str) -> TorchStatus | None:
        """The last answer for ``python``; None before the first."""
        found = self._known.get(python)
        return found[1] if found else None

    async def current(self, python: str) -> TorchStatus:
        """The answer for ``python``, asked again when older than :data:`RECHECK_S` (one
        question at a time per interpreter, off the event loop)."""
        found = self._known.get(python)
        if found is not None and self._clock() - found[0] <= RECHECK_S:
            return found[1]
        return await self.fresh(python)

    async def fresh(self, python: str) -> TorchStatus:
        """Ask ``python`` now (the install action: the user may just have installed it)."""
        asking = self._asking.get(python)
        if asking is None or asking.done():  # one question in flight per interpreter
            asking = asyncio.get_running_loop().run_in_executor(None, check, python)
            self._asking[python] = asking
        answer = await asyncio.shield(asking)  # a cancelled lens request leaves it running
        self._known[python] = (self._clock(), answer)
        return answer
