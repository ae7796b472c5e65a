"""“Measure with your model (runs your code)”: ``torchward profile`` from the editor.

The server never imports torch and never runs the user's code in its own process. On
the user's explicit request — the code lens above the job, or the command
``torchward.measure [uri, {interpreter?, timeout?, factory?, quiet?}]`` — it:

1. plans the profile from the editor's text, as ``torchward profile SCRIPT`` does
   (:mod:`torchward.profile.plan`: the model construction the static reader found, the
   job with the project's ``[tool.torchward.estimate]`` overrides and the target GPU);
2. runs ``python -m torchward.profile.worker`` in a **subprocess of the user's
   interpreter** — the command's ``interpreter`` argument, else ``$TORCHWARD_PROFILE_PYTHON``,
   else the interpreter running the server (which the VS Code extension starts with
   the Python extension's selected interpreter or the ``torchward.interpreter``
   setting) — with torchward's own folder on ``PYTHONPATH``, so the worker needs only
   torch there; the request goes on stdin, progress lines come back on stderr and are
   forwarded as ``$/progress``; a timeout (default :data:`DEFAULT_TIMEOUT_S`) and
   cancellation (``$/cancelRequest``, the progress's cancel button, or the command
   ``torchward.cancelMeasure [uri]``) kill the process;
3. stores the result in the profile cache (:mod:`torchward.profile.cache`, keyed by the
   model's source and the job — the same cache ``torchward profile`` writes) and sends
   the measured numbers to the status bar; from then on every estimate of the document
   is overlaid with the measurement (:func:`measured_overlay`, called by
   :class:`~.estimates.EstimateService`) — hover, inlay hints, lens and status bar
   show it, marked measured — until the model's code or the job changes.

A failure is said in editor terms (:func:`in_editor_terms`: no CLI syntax) with the
next step in the answer's ``next`` — ``choose-factory`` (run again with ``factory``, the
name of the document's function that builds the model) or ``install-torch``; ``quiet``
leaves showing it to the editor (the VS Code extension answers with an action). The
extension also asks the user's consent before the first run in a workspace.

Past 400 lines: the measurement's life in the editor (plan, worker, progress, cancel,
failure in editor terms) shares the per-document run table; the split waits for issue 29.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types

from .estimates import GpuEstimate
from .server import TorchwardServer

log = logging.getLogger(__name__)

MEASURE = "torchward.measure"
CANCEL_MEASURE = "torchward.cancelMeasure"
INSTALL_TORCH = "torchward.installTorch"
MEASURE_TITLE = "Measure with your model (runs your code)"
INSTALL_TITLE = "Measure needs torch in this interpreter — how to install it"
REMEASURE_TITLE = "Measured · measure again (runs your code)"
RUNNING_TITLE = "Measuring your model… (click to cancel)"
DEFAULT_TIMEOUT_S = 600.0
TORCHWARD_ROOT = str(Path(__file__).resolve().parents[1].parent)  # the folder holding torchward/
_TOKENS = itertools.count(1)


# -- the overlay: a cached measurement replaces the estimate's numbers ----------------------
def _plan(
    source: str, path: str, gpu: str | None, project: Any, factory: str | None = None
) -> tuple[Any, Any]:
    """(recipe, job) for the document, as ``torchward profile`` would plan them; with
    ``factory`` (a function of the document) the model is what that function returns."""
    from torchward.analysis.job.runconfig import read_source

    from torchward.profile.plan import factory_recipe, job_of, script_recipe

    from .estimates import lookup_gpu

    config, _ = read_source(source, path)
    models: tuple = ()
    if project is not None:
        config, models = config.merged(project.run_config()), project.models
    choice = lookup_gpu(gpu) if gpu else None
    if factory:
        recipe = factory_recipe(f"{path}:{factory}", {})
    else:
        recipe = script_recipe(path, source, config)
    job = job_of(config, choice.gpu if choice else None, models).job
    return recipe, job


def measured_estimate(base: GpuEstimate, result: Any, gpu: str | None) -> GpuEstimate:
    """``base`` (the static estimate) with the measured numbers, marked measured."""
    from torchward.profile.report import measured_report

    from .estimates import lookup_gpu

    device = None
    if gpu:
        with contextlib.suppress(Exception):
            device = lookup_gpu(gpu).gpu
    data = measured_report(result, device)
    return attrs.evolve(
        base,
        status="ok",
        gpu=data["gpu"] or base.gpu,
        peak_bytes=data["peak_bytes"],
        low_bytes=data["low_bytes"],
        high_bytes=data["high_bytes"],
        usable_bytes=data["usable_bytes"],
        verdict=data["verdict"],
        reason="",
        hint="",
        model=data["model"],
        params=data["params"],
        confidence="measured",
        terms=tuple((name, int(value)) for name, value in data["terms"].items()),
        detail=None,
    )


def measured_overlay(
    estimate: GpuEstimate, source: str, path: str, gpu: str | None, project: Any = None
) -> GpuEstimate:
    """The estimate, or the cached measurement of the same model source and job."""
    if estimate.status not in ("ok", "no-job") or not path:
        return estimate
    from torchward.profile import cache

    if not cache.cache_folder(path).is_dir():  # nothing was ever measured here: no parsing
        return estimate
    try:
        recipe, job = _plan(source, path, gpu, project)
        found = cache.lookup(recipe, job, path)
    except Exception:  # no model construction, a job that cannot be profiled...
        return estimate
    return estimate if found is None else measured_estimate(estimate, found, gpu)


# -- the lens --------------------------------------------------------------------------------
def measure_lens(server: TorchwardServer, document: Any, estimate: GpuEstimate) -> Any:
    """Above the job: run a measurement (or cancel the running one) — where torch imports
    in the interpreter the measurement runs in; elsewhere, how to install it
    (:mod:`.torch_probe`)."""
    from .lenses import _lens, step_line

    if not _measurable(document, estimate):
        return None
    line = estimate.line_of("model") or step_line(estimate, document)
    if line is None:
        return None
    if document.uri in runs(server):
        command = types.Command(
            title=RUNNING_TITLE, command=CANCEL_MEASURE, arguments=[document.uri]
        )
    elif (torch := _probe(server).known(_interpreter({}))) is None:
        return None  # not asked (lenses made without ask_torch first): no judgement, no lens
    elif torch.importable is False:  # Measure would fail: say how to install torch instead
        command = types.Command(
            title=INSTALL_TITLE, command=INSTALL_TORCH, arguments=[document.uri]
        )
    else:
        title = REMEASURE_TITLE if estimate.confidence == "measured" else MEASURE_TITLE
        command = types.Command(title=title, command=MEASURE, arguments=[document.uri])
    return _lens(document, line, command)


def _measurable(document: Any, estimate: GpuEstimate) -> bool:
    """The lens is offered for the user's own model, in a file saved on disk (its sibling
    modules are imported from there): a training script whose model the estimator could
    not size (``no-job``), a local ``nn.Module`` it counted, or one already measured.
    Catalog models keep their calibrated estimate (``torchward profile NAME`` measures
    them from the command line, with transformers installed)."""
    if estimate.status not in ("ok", "no-job") or not document.path:
        return False
    if not os.path.isfile(document.path):
        return False
    if estimate.status == "no-job" or estimate.confidence == "measured":
        return True
    resolved = getattr(estimate.detail, "resolved", None)
    return getattr(getattr(resolved, "arch", None), "model_type", None) == "custom"


def _probe(server: TorchwardServer) -> Any:
    """The server's :class:`~.torch_probe.TorchProbe`."""
    found = getattr(server, "_torchward_torch_probe", None)
    if found is None:
        from .torch_probe import TorchProbe

        found = TorchProbe()
        server._torchward_torch_probe = found  # type: ignore[attr-defined]
    return found


async def ask_torch(server: TorchwardServer, uri: str) -> None:
    """Before the lenses of ``uri`` are made (:data:`.lenses.LENS_INPUTS`): whether torch
    imports in the interpreter a measurement would run in, asked again when the answer is
    old — not for a document that gets no Measure lens anyway (no process started)."""
    document, estimate = server.documents.get(uri), server.last_fit.get(uri)
    if document is not None and estimate is not None and not _measurable(document, estimate):
        return
    await _probe(server).current(_interpreter({}))


async def install_torch(server: TorchwardServer, options: Any = None) -> dict[str, Any]:
    """``torchward.installTorch [uri?, {interpreter?, quiet?}]`` (the lens that replaces
    Measure where torch is missing): asks the interpreter again, refreshes the lenses (the
    Measure lens comes back once torch is there) and shows how to install torch — a
    message, since generic clients drop a command's answer — unless ``quiet`` (the VS
    Code extension shows it with a Copy button). The answer: ``{python, importable,
    command}``."""
    options = options if isinstance(options, dict) else {}
    status = await _probe(server).fresh(_interpreter(options))
    _refresh_lenses(server)
    if not options.get("quiet"):
        if status.importable is False:
            where = (
                ""
                if "--index-url" not in status.install
                else " (the CPU build: no NVIDIA GPU here)"
            )
            _show(
                server,
                types.MessageType.Warning,
                f"torchward: Measure needs torch in {status.python}. Install it with: "
                f"{status.install}{where}",
            )
        elif status.importable:
            _show(
                server,
                types.MessageType.Info,
                f"torchward: torch is installed in {status.python}; Measure is available.",
            )
    return {"status": "ok", **status.to_wire()}


def runs(server: TorchwardServer) -> dict[str, asyncio.Task]:
    """The measurements in flight, by document URI."""
    found = getattr(server, "_torchward_measurements", None)
    if found is None:
        found = {}
        server._torchward_measurements = found  # type: ignore[attr-defined]
    return found


# -- the subprocess --------------------------------------------------------------------------
class _Progress:
    """``$/progress`` for one measurement (when the client shows server-initiated progress)."""

    def __init__(self, server: TorchwardServer, title: str) -> None:
        self.server = server
        self.title = title
        self.token = f"torchward-measure-{next(_TOKENS)}"
        window = getattr(server.client_capabilities, "window", None)
        self.enabled = bool(getattr(window, "work_done_progress", False))

    async def begin(self) -> None:
        if not self.enabled:
            return
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(self.token), 5)
            self.server.work_done_progress.begin(
                self.token,
                types.WorkDoneProgressBegin(title=self.title, message="starting", cancellable=True),
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.info("no progress for the measurement: %r", error)
            self.enabled = False

    def report(self, message: str) -> None:
        if self.enabled:
            with contextlib.suppress(Exception):
                self.server.work_done_progress.report(
                    self.token, types.WorkDoneProgressReport(message=message, cancellable=True)
                )

    def end(self, message: str) -> None:
        if self.enabled:
            with contextlib.suppress(Exception):
                self.server.work_done_progress.end(
                    self.token, types.WorkDoneProgressEnd(message=message)
                )
            self.server.work_done_progress.tokens.pop(self.token, None)
            self.enabled = False

    @property
    def cancelled(self) -> bool:
        future = self.server.work_done_progress.tokens.get(self.token)
        return future is not None and future.cancelled()


class MeasureCancelled(Exception):
    pass


def _interpreter(options: dict[str, Any]) -> str:
    return str(
        options.get("interpreter") or os.environ.get("TORCHWARD_PROFILE_PYTHON") or sys.executable
    )


async def _run_worker(
    request: dict[str, Any], python: str, cwd: str, timeout: float, progress: _Progress
) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (TORCHWARD_ROOT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONWARNINGS"] = "ignore"
    proc = await asyncio.create_subprocess_exec(
        python,
        "-m",
        "torchward.profile.worker",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(request).encode())
    proc.stdin.close()
    tail: list[str] = []

    async def read_progress() -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            if line.startswith("progress: "):
                progress.report(line[len("progress: ") :])
            elif line:
                tail.append(line)
                del tail[:-20]

    async def watch_cancel() -> None:
        while not progress.cancelled:
            await asyncio.sleep(0.2)
        raise MeasureCancelled

    reader = asyncio.ensure_future(read_progress())
    output = asyncio.ensure_future(proc.stdout.read())
    watcher = asyncio.ensure_future(watch_cancel())
    try:
        done, _ = await asyncio.wait(
            {output, watcher}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if watcher in done:
            watcher.result()  # raises MeasureCancelled
        if output not in done:
            raise TimeoutError(f"the measurement took longer than {timeout:.0f} s")
        stdout = output.result().decode(errors="replace")
        await proc.wait()
        await asyncio.wait_for(reader, 5)
    finally:
        watcher.cancel()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await proc.wait()
        reader.cancel()
        output.cancel()
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        detail = "\n".join(tail[-5:]) or f"exit status {proc.returncode}"
        return {"error": f"the worker printed no result ({python}): {detail}"}
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"error": f"the worker's answer is not JSON: {lines[-1][:300]}"}


def _show(server: TorchwardServer, kind: types.MessageType, message: str) -> None:
    with contextlib.suppress(Exception):
        server.window_show_message(types.ShowMessageParams(kind, message))


# what the user can do next, by what went wrong: an editor answers with an action
NEXT_CHOOSE_FACTORY = "choose-factory"  # pick the function that builds the model
NEXT_INSTALL_TORCH = "install-torch"  # torch is missing from the interpreter


def in_editor_terms(error: BaseException | str) -> tuple[str, str | None]:
    """A failure said for the editor and the next step: a plan refusal that naming the
    model's function would answer (``PlanError.needs_factory``) loses the CLI's advice and
    gets the choose-the-function action; a missing torch (the worker's import error) gets
    the install action."""
    from torchward.profile.plan import PlanError

    if isinstance(error, PlanError) and error.needs_factory:
        return error.problem + ": choose the function that builds the model", NEXT_CHOOSE_FACTORY
    reason = str(error) or type(error).__name__
    if "torch is not installed" in reason or "No module named 'torch'" in reason:
        return "torch is not installed in this interpreter", NEXT_INSTALL_TORCH
    return reason, None


def _failed(
    server: TorchwardServer,
    uri: str,
    reason: BaseException | str,
    options: dict[str, Any],
    *,
    error: bool,
) -> dict[str, Any]:
    """The answer of a failed measurement, shown unless the editor shows it itself (``quiet``)."""
    reason, next_step = in_editor_terms(reason)
    if not options.get("quiet"):
        kind = types.MessageType.Error if error else types.MessageType.Warning
        verb = "measurement failed" if error else "cannot measure"
        _show(server, kind, f"torchward: {verb} — {reason}")
    answer = {"uri": uri, "status": "error", "reason": reason}
    if next_step is not None:
        answer["next"] = next_step
    return answer


async def measure(server: TorchwardServer, uri: Any, options: Any = None) -> dict[str, Any]:
    """Run the measurement for the document ``uri``: the command's answer."""
    from torchward.profile import cache
    from torchward.profile.request import ProfileResult

    options = options if isinstance(options, dict) else {}
    document = server.documents.get(uri) if isinstance(uri, str) else None
    if document is None or not document.path:
        return {"uri": uri, "status": "error", "reason": "the document is not open"}
    if uri in runs(server):
        return {"uri": uri, "status": "error", "reason": "a measurement is already running"}
    settings = server.settings_for(document.path)
    lint = server.folders.lint_settings(document.path, settings)[0]
    gpu = server.target_gpu(settings, lint.target_gpu)
    factory = options.get("factory") if isinstance(options.get("factory"), str) else None
    try:
        recipe, job = await asyncio.get_running_loop().run_in_executor(
            server.executor,
            lambda: _plan(document.text, document.path, gpu, lint.estimator, factory),
        )
    except Exception as error:
        return _failed(server, uri, error, options, error=False)
    timeout = float(options.get("timeout") or DEFAULT_TIMEOUT_S)
    python = _interpreter(options)
    progress = _Progress(server, f"torchward: measuring {recipe.label} (runs your code)")
    request = {"recipe": recipe.to_dict(), "job": job.to_dict()}
    task = asyncio.current_task()
    if task is not None:
        runs(server)[uri] = task
    _refresh_lenses(server)
    await progress.begin()
    try:
        answer = await _run_worker(
            request, python, str(Path(document.path).parent), timeout, progress
        )
    except (MeasureCancelled, asyncio.CancelledError):
        progress.end("cancelled")
        return {"uri": uri, "status": "cancelled", "reason": "the measurement was cancelled"}
    except (TimeoutError, OSError) as error:
        progress.end("failed")
        return _failed(server, uri, f"{error} ({python})", options, error=True)
    finally:
        runs(server).pop(uri, None)
        _refresh_lenses(server)
    if "error" in answer:
        progress.end("failed")
        return _failed(server, uri, str(answer["error"]), options, error=True)
    result = ProfileResult.from_dict(answer["result"])
    cache.store(recipe, job, result, document.path)
    base = server.last_fit.get(uri) or GpuEstimate("ok", gpu)
    measured = measured_estimate(base, result, gpu)
    from .commands import notify_gpu_fit

    notify_gpu_fit(server, uri, measured)
    progress.end(f"peak {result.allocated_bytes / 2**30:.2f} GiB of tensors")
    return {
        "uri": uri,
        "status": "ok",
        **measured.to_wire_detailed(uri),
        "measured": result.to_dict(),
    }


def cancel(server: TorchwardServer, uri: Any) -> dict[str, Any]:
    task = runs(server).get(uri) if isinstance(uri, str) else None
    if task is None:
        return {"uri": uri, "status": "error", "reason": "no measurement is running"}
    task.cancel()
    return {"uri": uri, "status": "ok"}


def _refresh_lenses(server: TorchwardServer) -> None:
    from .lenses import refresh

    refresh(server)


def register(server: TorchwardServer) -> None:
    from .lenses import LENS_INPUTS, LENS_PROVIDERS

    if measure_lens not in LENS_PROVIDERS:
        LENS_PROVIDERS.append(measure_lens)
    if ask_torch not in LENS_INPUTS:
        LENS_INPUTS.append(ask_torch)

    @server.command(MEASURE)
    async def measure_command(*arguments: Any) -> dict[str, Any]:
        return await measure(
            server,
            arguments[0] if arguments else None,
            arguments[1] if len(arguments) > 1 else None,
        )

    @server.command(INSTALL_TORCH)
    async def install_torch_command(*arguments: Any) -> dict[str, Any]:
        return await install_torch(server, arguments[1] if len(arguments) > 1 else None)

    @server.command(CANCEL_MEASURE)
    def cancel_command(*arguments: Any) -> dict[str, Any]:
        return cancel(server, arguments[0] if arguments else None)
