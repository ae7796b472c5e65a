"""Inlay hints and code lenses: the estimate where the code that drives it is written.

Protocol model: the client asks for hints (``textDocument/inlayHint``, a range) and
lenses (``textDocument/codeLens``) when it shows a document, and again when the server
sends ``workspace/inlayHint/refresh`` / ``workspace/codeLens/refresh`` — which
:func:`refresh` does whenever a document's estimate changes. Both answer from the last
estimate (:mod:`.estimates`), never compute one, so they cost nothing per scroll.

- a hint at the end of the line that builds the model: parameters and weight memory;
  one beside the batch size: the activations it costs;
- a lens above the training loop (the ``for`` / ``while`` around the step the estimator
  read the mode from): "Peak ≈ 18.1 GiB on NVIDIA A100 80GB SXM4 · fits (23%)", whose
  command ``torchward.selectGpu`` without an argument asks the user for another GPU
  (the editor implements the prompt: editors/nvim, the VS Code extension); for a
  training script whose job cannot be sized, "torchward: no job found — Why?", whose
  command ``torchward.whyNoJob`` shows the reason and the next step.

Lenses come from :data:`LENS_PROVIDERS` (one function per lens, from the last estimate).

Each is switched by its setting (``inlayHints``, ``codeLens``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from lsprotocol import types

from .diagnostics import to_position
from .documents import Document
from .estimates import GpuEstimate
from .memory import batch_label, model_label, peak_label
from .server import TorchwardServer

SELECT_GPU = "torchward.selectGpu"
WHY_NO_JOB = "torchward.whyNoJob"
_LOOP = re.compile(r"(?:async\s+)?(?:for|while)\b")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def loop_line(document: Document, line: int) -> int:
    """The 1-based line of the loop around 1-based ``line`` (``line`` itself when none)."""
    lines = document.lines
    if not 1 <= line <= len(lines):
        return line
    depth = _indent(lines[line - 1])
    for index in range(line - 2, -1, -1):
        text = lines[index]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if _indent(text) < depth:
            if _LOOP.match(text.lstrip()):
                return index + 1
            depth = _indent(text)
            if depth == 0:
                break
    return line


def step_line(estimate: GpuEstimate, document: Document) -> int | None:
    """Where the training loop (or, failing that, the model) is: the lens's line."""
    mode = estimate.line_of("mode")
    if mode is not None:
        return loop_line(document, mode)
    return estimate.line_of("model")


def _current(server: TorchwardServer, uri: str) -> tuple[Document, GpuEstimate] | None:
    document = server.documents.get(uri)
    estimate = server.last_fit.get(uri)
    if document is None or estimate is None:
        return None
    return document, estimate


def _hint(
    server: TorchwardServer, document: Document, line: int, label: str | None
) -> types.InlayHint | None:
    if label is None or not 1 <= line <= len(document.lines):
        return None
    end = to_position(document, line, len(document.lines[line - 1]), server.codec)
    return types.InlayHint(position=end, label=label, padding_left=True)


def inlay_hints(server: TorchwardServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    found = _current(server, params.text_document.uri)
    if found is None:
        return []
    document, estimate = found
    if not server.settings_for(document.path).inlay_hints:
        return []
    first, last = params.range.start.line + 1, params.range.end.line + 1
    hints = []
    for field, label in (("model", model_label(estimate)), ("batch_size", batch_label(estimate))):
        line = estimate.line_of(field)
        if line is not None and first <= line <= last:
            hint = _hint(server, document, line, label)
            if hint is not None:
                hints.append(hint)
    return hints


def _lens(document: Document, line: int, command: types.Command) -> types.CodeLens:
    start = types.Position(min(max(line, 1), len(document.lines)) - 1, 0)
    return types.CodeLens(range=types.Range(start, start), command=command)


def peak_lens(
    server: TorchwardServer, document: Document, estimate: GpuEstimate
) -> types.CodeLens | None:
    """The peak and the verdict above the training loop; a click changes the GPU. For a
    training script whose job cannot be sized: "no job found — Why?", a click says why."""
    title = peak_label(estimate)
    line = step_line(estimate, document)
    if title is None or line is None:
        return None
    if estimate.status == "no-job":
        why = types.Command(title=title, command=WHY_NO_JOB, arguments=[document.uri])
        return _lens(document, line, why)
    return _lens(document, line, types.Command(title=title, command=SELECT_GPU, arguments=[]))


LensProvider = Callable[[TorchwardServer, Document, GpuEstimate], "types.CodeLens | None"]
# Each gives at most one lens from the document's last estimate; add a feature's lens here.
LENS_PROVIDERS: list[LensProvider] = [peak_lens]
# What a provider needs that takes time to learn (torch in the measurement's interpreter:
# .profiling.ask_torch), awaited before each lens request; cached by the feature that adds it.
LENS_INPUTS: list[Callable[[TorchwardServer, str], Awaitable[None]]] = []


def code_lenses(server: TorchwardServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    found = _current(server, params.text_document.uri)
    if found is None:
        return []
    document, estimate = found
    if not server.settings_for(document.path).code_lens or not document.lines:
        return []
    lenses = (provider(server, document, estimate) for provider in LENS_PROVIDERS)
    return [lens for lens in lenses if lens is not None]


def refresh(server: TorchwardServer) -> None:
    """Ask the client to re-request hints and lenses (an estimate changed)."""
    workspace = server.client_capabilities.workspace
    if workspace is None:
        return
    for capability, send in (
        (workspace.inlay_hint, server.workspace_inlay_hint_refresh),
        (workspace.code_lens, server.workspace_code_lens_refresh),
    ):
        if capability is not None and capability.refresh_support:
            try:
                send(None)
            except Exception:  # the pipe is gone; nothing to refresh
                pass


def _hints(server: TorchwardServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    if (located := server.notebooks.owner(params.text_document.uri)) is not None:
        from . import notebooks

        return notebooks.inlay_hints(server, params, *located, inlay_hints)
    return inlay_hints(server, params)


async def _lenses(server: TorchwardServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    for learn in LENS_INPUTS:
        await learn(server, params.text_document.uri)
    if (located := server.notebooks.owner(params.text_document.uri)) is not None:
        from . import notebooks

        return notebooks.code_lenses(server, params, *located, code_lenses)
    return code_lenses(server, params)


def register(server: TorchwardServer) -> None:
    server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))(
        lambda params: _hints(server, params)
    )

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(params: types.CodeLensParams) -> list[types.CodeLens]:
        return await _lenses(server, params)
