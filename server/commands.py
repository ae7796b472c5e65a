"""Commands, the estimate request and the GPU-fit notification.

- ``torchward.explain [code]`` → ``{code, markdown, url}``: the rule's documentation
  (``url`` only when the project publishes its rule pages). Generic clients drop a
  command's return value (eglot does), so the server *shows* it: a client that
  supports ``window/showDocument`` is asked to open it inside the editor — the Markdown
  is written to ``<temp>/torchward-rules/<code>.md`` — and any other gets
  ``window/showMessage`` with the rule's summary and where the full text is. The VS Code
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
- ``torchward.showGpuFit [uri]`` → the document's GPU fit: the memory breakdown as a
  Markdown document (``window/showDocument``, a temporary file) or the one-line verdict
  (``window/showMessage``); also offered as the source action "torchward: show GPU fit"
  (:mod:`.codeactions`), for clients without code lenses or inlay hints (eglot).
- ``torchward.selectGpu`` without a name from a client that does not ask the user itself
  (the lens sends it that way): ``window/showMessageRequest`` with common GPUs.
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
SHOW_GPU_FIT = "torchward.showGpuFit"
# offered by window/showMessageRequest when a client sends selectGpu without a name
COMMON_GPUS = ("T4", "L4", "A10G", "A100 40GB", "A100 80GB", "H100 80GB")
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


def markdown_file(name: str, markdown: str, kind: str = "rules") -> pathlib.Path:
    """A Markdown text as a file any editor can open (``showDocument``, a hover link)."""
    folder = (
        pathlib.Path(tempfile.gettempdir())
        / f"torchward-{kind}-{os.getuid() if hasattr(os, 'getuid') else 0}"
    )
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{name}.md"
    if not path.exists() or path.read_text(encoding="utf-8") != markdown:
        path.write_text(markdown, encoding="utf-8")
    return path


def rule_file(code: str, markdown: str) -> pathlib.Path:
    """The rule's documentation as a Markdown file any editor can open (``showDocument``)."""
    return markdown_file(code, markdown)


def shows_documents(server: TorchwardServer) -> bool:
    window = server.client_capabilities.window
    return bool(window and window.show_document and window.show_document.support)


def _show_document(server: TorchwardServer, path: pathlib.Path) -> None:
    future = server.window_show_document_async(
        types.ShowDocumentParams(uri=path.as_uri(), take_focus=True)
    )
    asyncio.ensure_future(future).add_done_callback(lambda f: f.cancelled() or f.exception())


def _show_message(server: TorchwardServer, message: str, kind=types.MessageType.Info) -> None:
    try:
        server.window_show_message(types.ShowMessageParams(kind, message))
    except Exception:  # no client (unit tests): the answer still says it
        pass


def explain(server: TorchwardServer, code: Any) -> dict[str, Any]:
    """The rule's documentation, *shown*: a client may drop the command's return value."""
    answer = rule_documentation(code)
    if not answer["markdown"]:
        _show_message(server, f"torchward: {answer['error']}", types.MessageType.Warning)
        return answer
    try:
        path = rule_file(answer["code"], answer["markdown"])
    except OSError as error:  # the answer still carries the text
        server.log(f"torchward: cannot write the rule documentation: {error}")
        path = None
    if path is not None and shows_documents(server):
        _show_document(server, path)
        return answer
    from torchward.analysis import rule_by_code

    rule = rule_by_code(answer["code"])
    summary = f"{answer['code']} {rule.name}: {rule.summary}" if rule else answer["code"]
    where = answer["url"] or (str(path) if path is not None else None)
    _show_message(server, f"torchward: {summary}" + (f" — the full text: {where}" if where else ""))
    return answer


def gpu_fit_markdown(server: TorchwardServer, uri: str, estimate: GpuEstimate) -> str:
    """The GPU fit of a document as a page: the verdict line, then the breakdown."""
    from .memory import breakdown_markdown, no_job_markdown, peak_label

    name = os.path.basename(uri) or uri
    if estimate.status == "ok":
        from .hover import _report

        body = breakdown_markdown(estimate, _report(estimate)) or ""
        return f"# torchward GPU fit — {name}\n\n{peak_label(estimate)}\n\n{body}\n"
    if estimate.status in ("no-job", "none"):
        return f"# torchward GPU fit — {name}\n\n{no_job_markdown(estimate)}\n"
    return f"# torchward GPU fit — {name}\n\nNo estimate: {estimate.reason}.\n"


async def show_gpu_fit(server: TorchwardServer, uri: Any) -> dict[str, Any]:
    """``torchward.showGpuFit [uri]``: the fit shown as a document, or as a message."""
    from .memory import peak_label

    if isinstance(uri, str) and (located := server.notebooks.owner(uri)) is not None:
        uri = located[0].uri  # a notebook cell: the notebook's program has the fit
    estimate = server.last_fit.get(uri) if isinstance(uri, str) else None
    if estimate is None:
        _show_message(server, "torchward: no GPU fit for this document yet")
        return {"uri": uri, "status": "error", "reason": "no estimate for this document yet"}
    answer = estimate.to_wire(uri)
    if shows_documents(server):
        loop = asyncio.get_running_loop()
        markdown = await loop.run_in_executor(
            server.executor, gpu_fit_markdown, server, uri, estimate
        )
        name = os.path.splitext(os.path.basename(uri))[0] or "document"
        try:
            _show_document(server, markdown_file(name, markdown, kind="gpu-fit"))
            return answer
        except OSError as error:
            server.log(f"torchward: cannot write the GPU fit: {error}")
    label = peak_label(estimate) or f"no estimate — {estimate.reason}"
    _show_message(server, label if label.startswith("torchward") else f"torchward: {label}")
    return answer


async def ask_for_gpu(server: TorchwardServer) -> dict[str, Any]:
    """selectGpu without a name: ask with ``window/showMessageRequest`` (any client)."""
    actions = [types.MessageActionItem(title=name) for name in COMMON_GPUS]
    try:
        choice = await server.window_show_message_request_async(
            types.ShowMessageRequestParams(
                types.MessageType.Info,
                "torchward: which GPU will this job run on? (any name or instance type: "
                "the torchward.selectGpu command with an argument, or the targetGpu setting)",
                actions,
            )
        )
    except Exception as error:  # a client that cannot ask
        return {"gpu": server.gpu_override, "status": "error", "error": repr(error)}
    if choice is None:
        return {"gpu": server.gpu_override, "status": "cancelled"}
    return select_gpu(server, choice.title)


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
    async def select_gpu_command(*arguments: Any) -> dict[str, Any]:
        name = arguments[0] if arguments else None
        if name is None or (isinstance(name, str) and not name.strip()):
            return await ask_for_gpu(server)
        return select_gpu(server, name)

    @server.command(SHOW_GPU_FIT)
    async def show_gpu_fit_command(*arguments: Any) -> dict[str, Any]:
        return await show_gpu_fit(server, arguments[0] if arguments else None)

    @server.feature(ESTIMATE_REQUEST)
    async def estimate_request(params: Any) -> dict[str, Any]:
        return await estimate(server, params)
