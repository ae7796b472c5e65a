"""Commands, the estimate request and the GPU-fit notification.

- ``torchward.explain [code]`` → ``{code, markdown, url}``: the rule's documentation;
  clients that support ``window/showDocument`` are also asked to open the rule's page.
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
from typing import Any

from lsprotocol import types

from .diagnostics import docs_url
from .estimates import GpuEstimate, UnknownGpu, lookup_gpu
from .hover import rule_markdown
from .server import TorchwardServer

EXPLAIN = "torchward.explain"
SELECT_GPU = "torchward.selectGpu"
ESTIMATE_REQUEST = "torchward/estimate"
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


def explain(server: TorchwardServer, code: Any) -> dict[str, Any]:
    code = str(code or "").upper()
    markdown = rule_markdown(code)
    if markdown is None:
        return {"code": code, "markdown": None, "url": None, "error": f"unknown rule code {code!r}"}
    url = docs_url(code)
    window = server.client_capabilities.window
    if window and window.show_document and window.show_document.support:
        future = server.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
        asyncio.ensure_future(future).add_done_callback(lambda f: f.cancelled() or f.exception())
    return {"code": code, "markdown": markdown, "url": url}


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
    project = server.folders.lint_settings(document.path, settings)[0].estimator
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(
        server.executor,
        lambda: server.estimates.estimate(
            document.text,
            document.path,
            server.target_gpu(settings),
            enabled=settings.estimator,
            project=project,
        ),
    )
    return result.to_wire_detailed(uri)


def register(server: TorchwardServer) -> None:
    @server.command(EXPLAIN)
    def explain_command(*arguments: Any) -> dict[str, Any]:
        return explain(server, arguments[0] if arguments else None)

    @server.command(SELECT_GPU)
    def select_gpu_command(*arguments: Any) -> dict[str, Any]:
        return select_gpu(server, arguments[0] if arguments else None)

    @server.feature(ESTIMATE_REQUEST)
    async def estimate_request(params: Any) -> dict[str, Any]:
        return await estimate(server, params)
