"""Measure one step of the user's model: the part of the profile that imports torch.

:func:`measure` builds the model from its recipe under ``FakeTensorMode`` on the
measuring device (a fake ``cuda`` by default, :mod:`.fakecuda`) and runs the job's step
under the live-storage counter. Nothing is allocated for real: the peak of a 7B model's
training step costs seconds and a few hundred MB of the machine's memory.

``python -m torchward.profile.worker`` reads ``{"recipe": ..., "job": ...}`` as JSON on
stdin and prints ``{"result": ...}`` or ``{"error": ...}`` as the last line of stdout;
progress goes to stderr as ``progress: <text>`` lines. This is how the language server
runs a profile in the user's interpreter: the module needs the standard library and torch
only (``torchward/__init__.py`` and this package's ``__init__`` import nothing), so the
server puts torchward's folder on ``PYTHONPATH`` and nothing needs installing there.

The same code runs on real tensors (``fake=False``, ``device="cpu"``): the tests compare
the fake-tensor peak with a real CPU execution of small models.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from . import fakecuda
from .build import UserCodeError, build_model, load_callable, uses_transformers
from .request import ModelRecipe, ProfileJob, ProfileResult

__all__ = ["main", "measure"]


def _progress(text: str) -> None:
    print(f"progress: {text}", file=sys.stderr, flush=True)


def _move(model: Any, device: str, half: Any) -> None:
    """Parameters and buffers onto ``device`` (and floating ones to ``half``), as the user's
    ``model.to(...)`` would; in place through ``.data``, because ``Module.to`` swaps fake
    tensors, which the counter's weak references forbid."""
    for tensor in [*model.parameters(), *model.buffers()]:
        target = half if half is not None and tensor.is_floating_point() else tensor.dtype
        if tensor.device.type != device or tensor.dtype != target:
            tensor.data = tensor.data.to(device=device, dtype=target)


def measure(
    recipe: ModelRecipe,
    job: ProfileJob,
    *,
    device: str | None = None,
    fake: bool = True,
    block: int | None = None,
    progress: Callable[[str], None] = lambda text: None,
) -> ProfileResult:
    """Peak live tensor storage of ``job``'s step on the model ``recipe`` builds.

    ``device``: ``None`` chooses (fake ``cuda`` when possible, :func:`.fakecuda.prepare`);
    ``"cpu"`` measures on the CPU (``fake=False``: real execution, for checking).
    ``block``: allocation rounding (512 bytes on cuda, as the caching allocator; 1 on cpu).
    """
    notes: list[str] = []
    if device is None:
        setup = fakecuda.prepare()
        device = setup.device
        how = setup.how
        if setup.note:
            notes.append(setup.note)
    else:
        how = "requested"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs only: never a download
    progress("importing torch")
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    # a failing op of the user's model is reported once, as the profile's error; torch
    # would also log its whole stack to stderr
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

    from . import emulation
    from .counter import BLOCK, LiveStorageCounter, rounded
    from .steps import run_step, torch_dtype

    emulation.set_sdpa_sm(job.sm)
    emulation.KERNELS_USED.clear()
    patched: dict[str, bool] = {}

    def before_call() -> None:
        if fake and ("transformers" in sys.modules or uses_transformers(recipe)):
            with contextlib.suppress(ImportError):
                emulation.patch_transformers()
                patched["transformers"] = True
        if device == "cuda" and how != "native":
            emulation.install_sdpa_rule()

    if block is None:
        block = BLOCK if device == "cuda" else 1
    counter = LiveStorageCounter(device, block)
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext()
    inputs = load_callable(recipe.inputs) if recipe.inputs else None
    started = time.perf_counter()
    torch.manual_seed(0)
    half = torch_dtype(job.dtype)
    with fake_mode, counter:
        progress("building the model")
        default = torch.get_default_dtype()
        if half is not None:
            torch.set_default_dtype(half)  # as from_pretrained(dtype=...) creates them
        try:
            with torch.device(device):
                model = build_model(recipe, before_call)
        finally:
            torch.set_default_dtype(default)
        _move(model, device, half)
        params = sum(p.numel() for p in model.parameters())
        progress(f"running one {job.mode} step ({params:,} parameters)")
        try:
            run_step(counter, model, job, device, inputs)
        except (Exception, SystemExit) as error:  # the model's own forward / loss failed
            how = f"--inputs {recipe.inputs}" if recipe.inputs else "inferred from its first layer"
            raise UserCodeError(
                f"one {job.mode} step of {recipe.label or type(model).__name__} failed: "
                f"{type(error).__name__}: {str(error)[:500]} (its batch: {how}; "
                "--inputs module:function makes one)"
            ) from error
        weights = sum(rounded(p.untyped_storage().nbytes(), block) for p in model.parameters())
    phases = tuple((name, peak) for name, peak in counter.phase_peaks.items())
    peak_phase = max(counter.phase_peaks, key=lambda n: counter.phase_peaks[n])
    terms = {k: v for k, v in counter.peak_terms.items() if v}
    label = {"native": "fake, native", "shim": "fake, shim"}.get(how, "fake" if fake else "real")
    if device == "cuda":
        notes.append(
            "kernel workspaces (cuBLAS / cuDNN, ~8-32 MiB) are not aten outputs and not counted"
        )
    name = recipe.label or recipe.target
    if not name or name.startswith("Auto"):  # AutoModelForCausalLM: say which model it built
        name = type(model).__name__
    return ProfileResult(
        model=name,
        params=int(params),
        job=job,
        allocated_bytes=int(counter.peak),
        peak_phase=peak_phase if counter.phase_peaks else counter.peak_phase,
        phases=phases,
        terms=terms,
        device=f"{device} ({label})",
        weight_bytes=int(weights),
        sdpa_kernels=dict(emulation.KERNELS_USED),
        seconds=round(time.perf_counter() - started, 2),
        torch_version=torch.__version__.split("+")[0],
        notes=tuple(notes),
    )


def main() -> int:
    """The subprocess entry: a request on stdin, one JSON line on stdout."""
    try:
        request = json.loads(sys.stdin.read())
        recipe = ModelRecipe.from_dict(request["recipe"])
        job = ProfileJob.from_dict(request["job"])
        result = measure(recipe, job, progress=_progress)
    except (UserCodeError, ValueError, ImportError, KeyError, OSError) as error:
        print(json.dumps({"error": f"{error}"}))
        return 1
    except (Exception, SystemExit) as error:
        detail = traceback.format_exc(limit=-6)
        print(json.dumps({"error": f"{type(error).__name__}: {error}", "traceback": detail}))
        return 1
    print(json.dumps({"result": result.to_dict()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
