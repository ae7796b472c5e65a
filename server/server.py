"""The language server object: the session's state and the glue between its parts.

:class:`TorchwardServer` holds what one editor session knows — open documents and their
analysis state, the editor's settings per workspace folder, the project configurations,
the negotiated position encoding and whether the client pulls diagnostics — and offers
the few operations the feature modules share (snapshot, schedule, deliver, settings for
a document). Each LSP concern lives in its own module and registers its handlers in
:func:`create_server`; none of them holds state of its own.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from torchward import __version__

from . import onsave
from .configuration import ServerSettings, merge_wire, settings_from_wire
from .diagnostics import wire_converter
from .documents import Document, DocumentStore
from .encoding import ColumnCodec
from .estimates import EstimateService, GpuEstimate
from .notebook_model import NotebookStore
from .notebooks import SYNC_OPTIONS
from .results import AnalysisState, DocumentResult
from .scan import WorkspaceScan
from .scheduler import Outcome, Scheduler, Snapshot
from .workspace import Workspace

log = logging.getLogger(__name__)

# Analysis is CPU-bound Python (the GIL serialises it); two workers let a small file
# finish while a large one is analysed, more would only contend.
ANALYSIS_WORKERS = 2


class TorchwardServer(LanguageServer):
    def __init__(self, estimates: EstimateService | None = None) -> None:
        from .transport import TorchwardProtocol, strict_converter

        super().__init__(
            "torchward",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=SYNC_OPTIONS,  # a notebook is analysed as one program
            # diagnostics go out as precomputed dicts; integers coming in must be integers
            converter_factory=lambda: strict_converter(wire_converter),
            protocol_cls=TorchwardProtocol,  # no pygls text documents: see .transport
        )
        self.documents = DocumentStore()
        self.notebooks = NotebookStore()  # open notebooks; each one's program is in documents
        self.states: dict[str, AnalysisState] = {}
        self.folders = Workspace()
        self.codec = ColumnCodec()
        self.pull_diagnostics = False
        self.client_name = ""  # clientInfo.name from initialize (links a client can follow)
        self.warm_up_progress: asyncio.Future | None = None  # $/progress of the engine loading
        self.generation = 0
        self.init_options: dict[str, Any] = {}
        self.global_settings: dict[str, Any] = {}
        self.folder_settings: dict[str, dict[str, Any]] = {}
        self.gpu_override: str | None = None
        self.estimates = estimates or EstimateService()
        self.last_fit: dict[str, GpuEstimate] = {}
        self.stale_pulls: set[str] = set()  # answered with an older result; refresh on delivery
        self._settings_cache: dict[str | None, ServerSettings] = {}
        self._reported: set[str] = set()
        self.told: set[str] = set()  # one-time notices shown (.onsave)
        self.delivered = asyncio.Event()  # set at each delivery; workspace pulls wait on it
        self.executor = ThreadPoolExecutor(
            ANALYSIS_WORKERS, thread_name_prefix="torchward-analysis"
        )
        self.scheduler = Scheduler(
            snapshot=self.snapshot,
            current_key=self.current_key,
            deliver=self.deliver,
            executor=self.executor,
            estimates=self.estimates,
            deliver_estimate=self.deliver_estimate,
        )
        self.scan = WorkspaceScan(
            self
        )  # the background scan and cross-file index (after ``initialized``)

    # -- transport ------------------------------------------------------------------
    def start_io(self, stdin=None, stdout=None) -> None:
        """Serve over stdio with :mod:`.transport`'s loop: every malformed message is
        answered and a wrong ``Content-Length`` cannot make the server deaf."""
        import sys
        import threading

        from pygls.io_ import StdoutWriter

        from .transport import serve

        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(serve(self.protocol, stdin or sys.stdin.buffer, self._stop_event))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    # -- messages to the user -------------------------------------------------------
    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        try:
            self.window_log_message(types.LogMessageParams(kind, message))
        except Exception:  # no client yet (unit tests) or the pipe is gone
            log.info("%s", message)

    def warn_once(self, message: str) -> None:
        """Show ``message`` once per distinct text (configuration errors recur on every lookup)."""
        if message in self._reported:
            return
        self._reported.add(message)
        try:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, message))
        except Exception:
            log.warning("%s", message)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls calls this for any failed handler: log it, never pop dialogs per keystroke."""
        self.log(
            f"torchward internal error ({getattr(source, '__name__', source)}): {error!r}",
            types.MessageType.Error,
        )

    # -- settings --------------------------------------------------------------------
    def settings_changed(self) -> None:
        """Forget resolved settings and configurations; results of older generations are stale."""
        self.generation += 1
        self._settings_cache.clear()
        self._reported.clear()
        self.folders.invalidate()

    def settings_for(self, path: str) -> ServerSettings:
        folder = self.folders.folder_for(path)
        cached = self._settings_cache.get(folder)
        if cached is None:
            raw = merge_wire(
                self.init_options, self.global_settings, self.folder_settings.get(folder or "", {})
            )
            cached, errors = settings_from_wire(raw)
            for error in errors:
                self.warn_once(error)
            self._settings_cache[folder] = cached
        return cached

    def target_gpu(self, settings: ServerSettings, project_gpu: str | None = None) -> str | None:
        """The GPU the editor shows and judges against: ``selectGpu``, else the editor's
        ``targetGpu``, else the project's ``[tool.torchward] target-gpu``."""
        return self.gpu_override or settings.target_gpu or project_gpu

    # -- analysis --------------------------------------------------------------------
    def current_key(self, uri: str) -> tuple[int, int] | None:
        document = self.documents.get(uri)
        return None if document is None else (document.version, self.generation)

    def snapshot(self, uri: str) -> Snapshot | None:
        document = self.documents.get(uri)
        if document is None:
            return None
        settings = self.settings_for(document.path)
        lint, error = self.folders.lint_settings(document.path, settings)
        if error:
            self.warn_once(error + " (using the default configuration)")
        gpu = self.target_gpu(settings, lint.target_gpu)
        if gpu and gpu != lint.target_gpu:
            lint = attrs.evolve(
                lint, target_gpu=gpu
            )  # TW010 judges against the GPU the editor shows
        return Snapshot(
            uri,
            document.path,
            document.version,
            self.generation,
            document.text,
            lint,
            gpu=gpu,
            estimator=settings.estimator,
            **onsave.snapshot_fields(document, settings.large_file_lines),
        )

    def schedule(self, uri: str, *, immediate: bool = False) -> None:
        document = self.documents.get(uri)
        if document is None:
            return
        if not immediate and onsave.defer(self, uri):
            return  # too large to analyse as you type: analysed when saved
        delay = 0.0 if immediate else self.settings_for(document.path).debounce_ms / 1000.0
        self.scheduler.schedule(uri, delay)

    def reanalyse_all(self) -> None:
        for document in self.documents:
            self.schedule(document.uri, immediate=True)

    def is_current(self, uri: str, result: DocumentResult | None) -> bool:
        return result is not None and self.current_key(uri) == (result.version, result.generation)

    def deliver(self, outcome: Outcome) -> None:
        """Store a fresh outcome (the scheduler checked it is current) and tell the client."""
        snapshot = outcome.snapshot
        state = self.states.setdefault(snapshot.uri, AnalysisState())
        report = outcome.report
        if any(p.kind == "syntax-error" for p in report.problems):
            findings = tuple(f for f in state.good if snapshot.settings.is_enabled(f.code))
        else:
            findings = report.findings
            state.good = findings
        state.result = DocumentResult(
            snapshot.version, snapshot.generation, findings, report.problems, outcome.carried
        )
        for problem in report.problems:
            if problem.kind == "internal-error":
                self.log(
                    f"torchward: {snapshot.path}: {problem.message}", types.MessageType.Warning
                )
        log.debug(
            "analysed %s v%s in %.1f ms", snapshot.uri, snapshot.version, outcome.seconds * 1000
        )
        from . import commands, reporting  # the feature modules import this one

        self.delivered.set()
        reporting.publish(self, snapshot.uri)
        if outcome.estimate is not None:
            commands.notify_gpu_fit(self, snapshot.uri, outcome.estimate)

    def deliver_estimate(self, snapshot: Snapshot, estimate: GpuEstimate) -> None:
        """A fresh GPU fit for the current version: notify status bars, refresh hints and lenses."""
        from . import commands

        commands.notify_gpu_fit(self, snapshot.uri, estimate)

    def document(self, uri: str) -> Document | None:
        return self.documents.get(uri)


def create_server(estimates: EstimateService | None = None) -> TorchwardServer:
    """A server with every feature registered."""
    from . import (
        codeactions,
        commands,
        hover,
        lenses,
        lifecycle,
        notebooks,
        plan,
        profiling,
        reporting,
        scan,
        textsync,
    )

    server = TorchwardServer(estimates)
    for module in (
        lifecycle,
        textsync,
        notebooks,
        reporting,
        codeactions,
        hover,
        commands,
        lenses,
        scan,
        profiling,
        plan,
    ):
        module.register(server)
    return server
