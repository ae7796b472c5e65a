"""Commands, the estimate request and the GPU-fit notification.

- ``torchward.explain [code]`` → ``{code, markdown, url}``: the rule's documentation
  (``url`` only when the project publishes its rule pages). A client that supports
  ``window/showDocument`` is asked to show it *inside the editor*: the Markdown is
  written to ``<temp>/torchward-rules/<code>.md`` and opened there. The VS Code
  extension and editors/nvim handle the command themselves (a Markdown preview of a
  virtual document; a scratch buffer) with the request ``torchward/ruleDocumentation
  {code}``, which answers the same object and opens nothing.
- ``torchward.whyNoJob [uri]`` → ``{uri, status, reason, hint}``: why the document has no
  estimate and the next step, also shown with ``window/showMessage`` (the "no job
  found — Why?" lens and status items run it).
- ``torchward.selectGpu [name]`` → checks the name against the GPU and instance
  catalog; a known one becomes the GPU for this session (over the ``targetGpu``
  setting) and every open document is re-estimated: ``{gpu, name, count, status: "ok"}``
  (``gpu`` as given, ``name`` the catalog's). An unknown one changes nothing:
  ``{status: "error", error}`` with the closest names. Without an argument the
  *editor* is expected to ask the user (the code lens sends it that way).
- request ``torchward/estimate {uri}`` → the document's GPU fit with its breakdown
  (see :mod:`.estimates` for the shape).
- notification ``torchward/gpuFit`` → sent after an analysis whenever a document's
  estimate differs from the last one sent for it (status bars listen to it); inlay
  hints and code lenses are refreshed at the same time.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import tempfile
from typing import Any

from lsprotocol import types

from . import reporting
from .diagnostics import docs_url
from .estimates import GpuEstimate, UnknownGpu, lookup_gpu
from .hover import rule_markdown
from .server import TorchwardServer

EXPLAIN = "torchward.explain"
SELECT_GPU = "torchward.selectGpu"
WHY_NO_JOB = "torchward.whyNoJob"
ESTIMATE_REQUEST = "torchward/estimate"
RULE_DOCUMENTATION_REQUEST = "torchward/ruleDocumentation"
GPU_FIT_NOTIFICATION = "torchward/gpuFit"


def notify_gpu_fit(server: TorchwardServer, uri: str, estimate: GpuEstimate) -> None:
    """Keep ``estimate``; notify status bars when what they show changed, and refresh
    hints and lenses when anything did (an edit above the model moves its line)."""
    from . import lenses

    previous = server.last_fit.get(uri)
    if previous == estimate:
        return
    server.last_fit[uri] = estimate
    if previous is None or previous.to_wire(uri) != estimate.to_wire(uri):
        server.protocol.notify(GPU_FIT_NOTIFICATION, estimate.to_wire(uri))
    lenses.refresh(server)


def rule_documentation(code: Any) -> dict[str, Any]:
    code = str(code or "").strip().upper()
    markdown = rule_markdown(code)
    if markdown is None:
        return {"code": code, "markdown": None, "url": None, "error": f"unknown rule code {code!r}"}
    return {"code": code, "markdown": markdown, "url": docs_url(code)}


def rule_file(code: str, markdown: str) -> pathlib.Path:
    """The rule's documentation as a Markdown file any editor can open (``showDocument``)."""
    folder = (
        pathlib.Path(tempfile.gettempdir())
        / f"torchward-rules-{os.getuid() if hasattr(os, 'getuid') else 0}"
    )
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{code}.md"
    if not path.exists() or path.read_text(encoding="utf-8") != markdown:
        path.write_text(markdown, encoding="utf-8")
    return path


def explain(server: TorchwardServer, code: Any) -> dict[str, Any]:
    answer = rule_documentation(code)
    window = server.client_capabilities.window
    if answer["markdown"] and window and window.show_document and window.show_document.support:
        try:
            uri = rule_file(answer["code"], answer["markdown"]).as_uri()
        except OSError as error:  # the answer still carries the text
            server.log(f"torchward: cannot write the rule documentation: {error}")
            return answer
        future = server.window_show_document_async(
            types.ShowDocumentParams(uri=uri, take_focus=True)
        )
        asyncio.ensure_future(future).add_done_callback(lambda f: f.cancelled() or f.exception())
    return answer


def why_no_job(server: TorchwardServer, uri: Any) -> dict[str, Any]:
    """Why the document has no estimate, and what to do; shown to the user as well."""
    estimate = server.last_fit.get(uri) if isinstance(uri, str) else None
    if estimate is None:
        return {"uri": uri, "status": "error", "reason": "no estimate for this document yet"}
    answer = {
        "uri": uri,
        "status": estimate.status,
        "reason": estimate.reason,
        "hint": estimate.hint,
    }
    if estimate.status in ("no-job", "none", "error", "unavailable", "disabled"):
        message = f"torchward: no estimate — {estimate.reason}."
        if estimate.status == "none":
            message = f"torchward: no training job — {estimate.reason}. Next step: {estimate.hint}."
        if estimate.status == "no-job":
            message = f"torchward: no job found — {estimate.reason}. Next step: {estimate.hint}."
        try:
            server.window_show_message(types.ShowMessageParams(types.MessageType.Info, message))
        except Exception:  # no client (unit tests): the answer still says it
            pass
    return answer


def select_gpu(server: TorchwardServer, name: Any) -> dict[str, Any]:
    if not isinstance(name, str) or not name.strip():
        return {
            "gpu": server.gpu_override,
            "status": "error",
            "error": "give a GPU name or instance type",
        }
    answer: dict[str, Any] = {"gpu": name.strip(), "status": "ok"}
    if server.estimates.is_available:
        try:
            choice = lookup_gpu(name.strip())
        except UnknownGpu as error:
            return {"gpu": server.gpu_override, "status": "error", "error": str(error)}
        answer.update(name=choice.gpu.name, count=choice.count)
    else:
        answer["status"] = "unavailable"
    server.gpu_override = name.strip()
    server.last_fit.clear()
    server.settings_changed()
    server.reanalyse_all()
    reporting.request_refresh(server)  # TW010 judges against the new GPU: pullers pull again
    return answer


def _param(params: Any, name: str) -> Any:
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)


async def estimate(server: TorchwardServer, params: Any) -> dict[str, Any]:
    uri = _param(params, "uri")
    document = server.documents.get(uri) if isinstance(uri, str) else None
    if document is None:
        return {"uri": uri, "status": "error", "reason": "the document is not open"}
    settings = server.settings_for(document.path)
    lint = server.folders.lint_settings(document.path, settings)[0]
    project = lint.estimator
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(
        server.executor,
        lambda: server.estimates.estimate(
            document.text,
            document.path,
            server.target_gpu(settings, lint.target_gpu),
            enabled=settings.estimator,
            project=project,
        ),
    )
    return result.to_wire_detailed(uri)


def register(server: TorchwardServer) -> None:
    @server.command(EXPLAIN)
    def explain_command(*arguments: Any) -> dict[str, Any]:
        return explain(server, arguments[0] if arguments else None)

    @server.command(WHY_NO_JOB)
    def why_no_job_command(*arguments: Any) -> dict[str, Any]:
        return why_no_job(server, arguments[0] if arguments else None)

    @server.feature(RULE_DOCUMENTATION_REQUEST)
    def rule_documentation_request(params: Any) -> dict[str, Any]:
        return rule_documentation(_param(params, "code"))

    @server.command(SELECT_GPU)
    def select_gpu_command(*arguments: Any) -> dict[str, Any]:
        return select_gpu(server, arguments[0] if arguments else None)

    @server.feature(ESTIMATE_REQUEST)
    async def estimate_request(params: Any) -> dict[str, Any]:
        return await estimate(server, params)
