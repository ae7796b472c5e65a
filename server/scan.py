"""The background scan of the workspace folders: the cross-file index and workspace diagnostics.

(Past 400 lines on purpose, for now: one worker thread owns the index, its reads, its
progress reporting and its diagnostics, and splitting them would put locking between
them. The next change to it should split progress reporting into its own module.)

Setting ``workspaceScan`` (per folder): ``"off"`` (the default), ``"index"`` or
``"diagnostics"``. After ``initialized``, and again after every settings, project
configuration or folder change, each folder that is not off is walked with the CLI's
own file discovery (:func:`torchward.discovery.discover`: ``.gitignore``, ``exclude``,
virtual environments) and every Python file is read on one dedicated worker thread:

- **index**: its module name (dotted from the topmost regular package, else from the
  folder, ``src/`` dropped) and its top-level classes and functions
  (:class:`torchward.analysis.facts.semantic.ModuleIndex`, read-only);
- **diagnostics**: also its :class:`~torchward.analysis.FileReport` under the file's own
  settings (:class:`torchward.selection.RuleSelection` through :class:`.workspace.Workspace`),
  reported for files that are not open: pushed as ``publishDiagnostics`` without a
  version, or returned by ``workspace/diagnostic`` (result ids respected). An open
  document always wins; closing it falls back to its on-disk result.

The scan is bounded (:data:`MAX_FILES` per folder, files above the editor's size limit
are listed but not read), yields to live analysis (it waits while an open document is
being analysed, so typing stays fast), skips files whose ``stat`` and settings did not
change since the last run, and is cancelled when the server shuts down, when it is
restarted, or when the user cancels its ``$/progress`` (``window/workDoneProgress/create``
when the client supports it; begin / report / end with percentages and file counts).
``workspace/didChangeWatchedFiles`` (``**/*.py``, registered while a scan is on) and
``didSave`` re-read single files. ``torchward/workspaceIndex`` returns the index.

An open document is recognised by its path, not its URI's spelling (:meth:`WorkspaceScan.is_open`).
An exception inside the analysis of a scanned file becomes an ``internal-error`` problem
for users and is raised under the engine's strict mode (``$TORCHWARD_STRICT``, the tests).
"""

from __future__ import annotations

import ast
import asyncio
import itertools
import logging
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import FileReport, LintSettings

    from .encoding import ColumnCodec
    from .server import TorchwardServer

from .results import DocumentResult
from .workspace import module_index, module_text_changed

log = logging.getLogger(__name__)

INDEX_REQUEST = "torchward/workspaceIndex"
WATCHER_ID = "torchward-python-watcher"
SCANNED_SUFFIXES = (".py", ".pyi", ".pyw")  # notebooks are other documents in an editor
MAX_FILES = 10_000  # per folder: beyond this the index says it is truncated
REPORT_EVERY_S = 0.1  # $/progress reports at most this often
IDLE_POLL_S = 0.02  # while live analysis runs the scan waits in steps of this
CREATE_TIMEOUT_S = 10.0  # a client that never answers window/workDoneProgress/create
_TOKENS = itertools.count(1)


@attrs.frozen
class IndexedFile:
    """What the scan knows about one file on disk."""

    path: str
    uri: str
    module: str
    classes: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    stamp: tuple[int, int] | None = None  # (mtime_ns, size) of what was read
    settings: LintSettings | None = None  # what ``report`` was computed under; None: not analysed
    report: FileReport | None = None
    result: DocumentResult | None = None  # the report as shown (result id)
    diagnostics: tuple[types.Diagnostic, ...] = ()  # converted with the file's own text
    problem: str | None = None  # why it could not be read or indexed
    symbols: Symbols | None = None  # what importers can use (nn.Module classes, registries)

    def to_wire(self) -> dict[str, Any]:
        report = self.report
        return {
            "uri": self.uri,
            "path": self.path,
            "module": self.module,
            "classes": list(self.classes),
            "functions": list(self.functions),
            "analysed": report is not None,
            "findings": [f.code for f in report.findings] if report else [],
            "problems": [p.kind for p in report.problems] if report else [],
            "error": self.problem,
            "models": [
                {"name": name, "submodules": list(submodules)}
                for name, submodules in (self.symbols.models if self.symbols else ())
            ],
            "registries": {
                name: list(keys) for name, keys in (self.symbols.registries if self.symbols else ())
            },
        }


@attrs.define
class FolderIndex:
    uri: str
    root: str
    mode: str
    state: str = "scanning"  # scanning | done | cancelled
    truncated: bool = False
    files: dict[str, IndexedFile] = attrs.field(factory=dict)  # by absolute path

    def modules(self) -> dict[str, str]:
        return {entry.module: path for path, entry in sorted(self.files.items())}


# -- on the scan thread ---------------------------------------------------------------
def module_name(path: str, root: str, packages: dict[str, bool]) -> str:
    """The dotted module name of ``path``: from its topmost regular package, else from ``root``."""
    directory, name = os.path.split(path)
    stem = name.rsplit(".", 1)[0]
    parts = [] if stem == "__init__" else [stem]

    def is_package(folder: str) -> bool:
        if folder not in packages:
            packages[folder] = os.path.isfile(os.path.join(folder, "__init__.py"))
        return packages[folder]

    if is_package(directory):
        while is_package(directory) and os.path.dirname(directory) != directory:
            parts.insert(0, os.path.basename(directory))
            directory = os.path.dirname(directory)
        return ".".join(parts)
    relative = os.path.relpath(directory, root) if directory.startswith(root) else "."
    prefix = [] if relative == "." else relative.replace(os.sep, "/").split("/")
    if prefix[:1] == ["src"]:
        prefix = prefix[1:]
    return ".".join(prefix + parts) or os.path.basename(directory)


def discover_folder(
    root: str, exclude: tuple[str, ...], config_root: str
) -> tuple[list[str], bool]:
    """The Python files under ``root`` (the CLI's discovery), at most :data:`MAX_FILES`."""
    from torchward.discovery import discover
    from torchward.patterns import PatternList

    found = discover([root], PatternList.parse("", list(exclude)), config_root)
    paths = [f.absolute for f in found if f.absolute.endswith(SCANNED_SUFFIXES)]
    return paths[:MAX_FILES], len(paths) > MAX_FILES


@attrs.frozen
class Symbols:
    """A file's top-level classes and functions, and what its importers can use: its
    ``nn.Module`` classes (each with the submodules ``__init__`` registers) and its
    registries (name -> keys) — the workspace summary
    (:class:`torchward.analysis.workspace.ModuleSummary`)."""

    classes: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    models: tuple[tuple[str, tuple[str, ...]], ...] = ()
    registries: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _symbols(text: str, path: str) -> Symbols:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchward.analysis.syntax.parsing import (
            parse_module,  # the engine loads after initialize
        )

        tree = parse_module(text, path)
    try:
        from torchward.analysis.workspace import ModuleSummary

        summary = ModuleSummary(path, "", text, tree)
        index = summary.index
        return Symbols(
            tuple(sorted(name for name in index.classes if "." not in name)),
            tuple(sorted(index.top_functions)),
            tuple((c.name, c.submodules) for c in summary.module_classes.values()),
            tuple(sorted((name, tuple(sorted(keys))) for name, keys in summary.registries.items())),
        )
    except Exception:  # the index is a convenience: fall back to the module body
        classes = tuple(sorted(n.name for n in tree.body if isinstance(n, ast.ClassDef)))
        functions = tuple(
            sorted(
                n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
        )
        return Symbols(classes, functions)


def read_file(
    path: str,
    uri: str,
    module: str,
    settings: LintSettings | None,
    codec: ColumnCodec,
    known: IndexedFile | None,
) -> IndexedFile | None:
    """Index (and with ``settings``, analyse) one file; ``known`` when nothing changed, None
    when it no longer exists. Never raises."""
    from torchward.analysis import FileReport, Problem, analyze_source, decode_source
    from torchward.analysis.engine import strict

    from .diagnostics import diagnostics_for
    from .documents import Document
    from .scheduler import MAX_ANALYSED_CHARS

    def unread(stamp: tuple[int, int] | None, kind: str, message: str) -> IndexedFile:
        if settings is None:
            return IndexedFile(path, uri, module, stamp=stamp, problem=message)
        report = FileReport(path, (), (Problem(kind, f"torchward: {message}"),))
        result = DocumentResult(-1, 0, (), report.problems)
        diagnostics = tuple(diagnostics_for(Document(uri, "", 0), result, codec))
        return IndexedFile(
            path, uri, module, (), (), stamp, settings, report, result, diagnostics, message
        )

    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        return unread(None, "unreadable", f"cannot read file: {error.strerror or error}")
    stamp = (stat.st_mtime_ns, stat.st_size)
    if (
        known is not None
        and known.stamp == stamp
        and known.settings == settings
        and known.module == module
    ):
        return known
    if stat.st_size > MAX_ANALYSED_CHARS:
        return unread(stamp, "too-large", f"file too large to scan ({stat.st_size:,} bytes)")
    try:
        with open(path, "rb") as handle:
            text = decode_source(handle.read())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else str(error)
        return unread(stamp, "encoding", f"cannot read file: {reason}")
    symbols = Symbols()
    problem = None
    try:
        symbols = _symbols(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        problem = f"cannot parse: {error}"
    classes, functions = symbols.classes, symbols.functions
    if settings is None:
        return IndexedFile(
            path, uri, module, classes, functions, stamp, problem=problem, symbols=symbols
        )
    try:
        report = analyze_source(text, path, settings)
    except Exception as error:  # the engine promises not to raise; the scan does not rely on it
        if strict():  # the test suite: a swallowed bug here would pass every test
            raise
        report = FileReport(path, (), (Problem("internal-error", f"analysis failed: {error!r}"),))
    result = DocumentResult(-1, 0, report.findings, report.problems)  # -1: no editor version
    diagnostics = tuple(diagnostics_for(Document(uri, text, 0), result, codec))
    return IndexedFile(
        path,
        uri,
        module,
        classes,
        functions,
        stamp,
        settings,
        report,
        result,
        diagnostics,
        problem,
        symbols,
    )


# -- progress -----------------------------------------------------------------------
class ScanProgress:
    """``$/progress`` for one scan, when the client can show server-initiated progress."""

    def __init__(self, server: TorchwardServer) -> None:
        self.server = server
        self.token = f"torchward-scan-{next(_TOKENS)}"
        window = getattr(server.client_capabilities, "window", None)
        self.enabled = bool(getattr(window, "work_done_progress", False))
        self.started = False
        self._last = 0.0

    async def begin(self, message: str) -> None:
        if not self.enabled:
            return
        progress = self.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(self.token), CREATE_TIMEOUT_S)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.info("no progress for the workspace scan: %r", error)
            self.enabled = False
            return
        progress.begin(
            self.token,
            types.WorkDoneProgressBegin(
                title="torchward: scanning the workspace",
                message=message,
                percentage=0,
                cancellable=True,
            ),
        )
        self.started = True

    def report(self, done: int, total: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not self.started or (not force and now - self._last < REPORT_EVERY_S):
            return
        self._last = now
        percentage = 100 * done // total if total else 100
        self.server.work_done_progress.report(
            self.token,
            types.WorkDoneProgressReport(
                message=f"{done}/{total} files", percentage=percentage, cancellable=True
            ),
        )

    def end(self, message: str) -> None:
        if not self.started:
            return
        self.started = False
        try:
            self.server.work_done_progress.end(
                self.token, types.WorkDoneProgressEnd(message=message)
            )
        except Exception:  # the pipe is gone (shutting down)
            pass
        self.server.work_done_progress.tokens.pop(self.token, None)

    @property
    def cancelled(self) -> bool:
        """The user cancelled the progress in the editor."""
        future = self.server.work_done_progress.tokens.get(self.token)
        return future is not None and future.cancelled()


# -- the scan -----------------------------------------------------------------------
class WorkspaceScan:
    def __init__(self, server: TorchwardServer) -> None:
        self.server = server
        self.folders: dict[str, FolderIndex] = {}  # by folder URI
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="torchward-scan")
        self.started = False  # after ``initialized``
        self.ready = asyncio.Event()  # set by the first start: ``wait`` waits for it
        self.runs = 0
        self.task: asyncio.Task | None = None
        self._refreshes: set[asyncio.Task] = set()
        self._pushed: set[str] = set()  # URIs given non-empty diagnostics by a push
        self._tombstones: dict[str, str] = {}  # deleted file URI -> the empty report's result id
        self._packages: dict[str, bool] = {}
        self._watching = False

    # -- starting and stopping --------------------------------------------------------
    def start(self) -> None:
        """(Re)start the scan of every folder: after ``initialized`` and every settings change."""
        self.started = True
        self.ready.set()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self._packages.clear()
        self.runs += 1
        self.task = asyncio.ensure_future(self._scan())

    def restart(self) -> None:
        if self.started:
            self.start()

    def stop(self) -> None:
        self.started = False
        for task in [self.task, *self._refreshes]:
            if task is not None and not task.done():
                task.cancel()
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def wait(self, timeout_s: float) -> None:
        """Until the scan has started, and the running scan and single-file refreshes end (or ``timeout_s``)."""
        try:
            await asyncio.wait_for(self.ready.wait(), timeout_s)
        except asyncio.TimeoutError:
            return
        pending = [t for t in [self.task, *self._refreshes] if t is not None and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)

    # -- lookups ----------------------------------------------------------------------
    def mode_for(self, path: str) -> str:
        uri = self.server.folders.folder_for(path)
        folder = self.folders.get(uri) if uri else None
        return folder.mode if folder is not None else "off"

    def entry(self, path: str) -> IndexedFile | None:
        uri = self.server.folders.folder_for(path)
        folder = self.folders.get(uri) if uri else None
        return folder.files.get(os.path.abspath(path)) if folder else None

    def closed_reports(self) -> list[IndexedFile]:
        """Analysed files that are not open in the editor (their on-disk reports)."""
        open_files = self._open_files()
        return [
            entry
            for folder in self.folders.values()
            if folder.mode == "diagnostics"
            for entry in folder.files.values()
            if entry.result is not None and _same_file(entry.path) not in open_files
        ]

    def is_open(self, path: str) -> bool:
        """Whether ``path`` is open in the editor, under whatever URI spelling the client
        chose (``file:///a+b/x.py`` and ``file:///a%2Bb/x.py`` are the same file, and the
        scan's own URIs are percent-encoded): the buffer is shown, never the disk."""
        return _same_file(path) in self._open_files()

    def _open_files(self) -> set[str]:
        return {_same_file(document.path) for document in self.server.documents}

    def tombstones(self) -> dict[str, str]:
        return dict(self._tombstones)

    # -- the full scan ----------------------------------------------------------------
    async def _scan(self) -> None:
        server = self.server
        loop = asyncio.get_running_loop()
        plans = [
            (uri, root, server.settings_for(root).workspace_scan)
            for uri, root in server.folders.folders.items()
        ]
        modes = {uri: mode for uri, _, mode in plans}
        for uri, folder in list(self.folders.items()):
            if modes.get(uri, "off") != folder.mode:  # removed, switched off or to another mode
                self._drop_folder(uri)
        plans = [plan for plan in plans if plan[2] != "off"]
        if not plans:
            return
        await self._watch()
        progress = ScanProgress(server)
        outcome = "cancelled"
        try:
            await progress.begin("finding Python files")
            work: list[tuple[FolderIndex, str]] = []
            for uri, root, mode in plans:
                config, _ = server.folders.project_config(os.path.join(root, "__init__.py"))
                exclude = tuple(config.exclude) + tuple(config.extend_exclude)
                paths, truncated = await loop.run_in_executor(
                    self.executor, discover_folder, root, exclude, config.root
                )
                paths = [
                    p for p in paths if server.folders.folder_for(p) == uri
                ]  # a nested folder scans its own
                folder = self.folders.setdefault(uri, FolderIndex(uri, root, mode))
                folder.state, folder.truncated = "scanning", truncated
                for gone in set(folder.files) - set(paths):
                    self._remove(folder, gone)
                work += [(folder, path) for path in paths]
                if truncated:
                    server.log(
                        f"torchward: {root} has more than {MAX_FILES:,} Python files; scanned the first {MAX_FILES:,}",
                        types.MessageType.Warning,
                    )
            total = len(work)
            progress.report(0, total, force=True)
            for done, (folder, path) in enumerate(work, 1):
                if progress.cancelled:
                    break
                while server.scheduler.busy():  # live analysis first: the user is typing
                    await asyncio.sleep(IDLE_POLL_S)
                await self._read(folder, path)
                progress.report(done, total, force=done == total)
            else:
                outcome = "done"
            for uri, _, _ in plans:
                if uri in self.folders:
                    self.folders[uri].state = outcome
            counts = self.counts()
            findings = (
                f", {counts['findings']} findings"
                if any(mode == "diagnostics" for _, _, mode in plans)
                else ""
            )
            message = (
                f"{counts['files']} files indexed{findings}" if outcome == "done" else "cancelled"
            )
            progress.end(message)
            server.log(f"torchward: workspace scan {outcome}: {message}")
        except asyncio.CancelledError:
            raise
        except Exception as error:  # never take the server down; the open documents still work
            from torchward.analysis.engine import strict

            if strict():
                raise
            log.exception("the workspace scan failed")
            server.log(f"torchward: the workspace scan failed: {error!r}", types.MessageType.Error)
        finally:
            progress.end("cancelled")
            if server.pull_diagnostics:
                server.delivered.set()

    async def _read(
        self, folder: FolderIndex, path: str, force: bool = False
    ) -> IndexedFile | None:
        """Read and (in diagnostics mode) analyse ``path``; ``force``: even when its stat is
        unchanged (a module it imports changed)."""
        server = self.server
        uri = _uri_of(path)
        settings = None
        if folder.mode == "diagnostics":
            settings, _ = server.folders.lint_settings(path, server.settings_for(path))
        module = module_name(path, folder.root, self._packages)
        known = folder.files.get(path)
        loop = asyncio.get_running_loop()
        entry = await loop.run_in_executor(
            self.executor,
            read_file,
            path,
            uri,
            module,
            settings,
            server.codec,
            None if force else known,
        )
        if self.folders.get(folder.uri) is not folder:
            return None  # the folder was removed or rescanned meanwhile
        if entry is None:  # deleted: reads run in order on one thread, so this is the latest word
            self._remove(folder, path)
            return None
        folder.files[path] = entry
        self._tombstones.pop(uri, None)
        if entry is not known and folder.mode == "diagnostics":
            self._report(entry)
        return entry

    # -- single files -----------------------------------------------------------------
    def file_changed(self, path: str) -> None:
        """A file was created, changed or deleted on disk (watched files, a save): re-read it.

        Deletions are read too rather than forgotten at once: a read of the file that was
        queued before it was deleted must not bring it back."""
        if not path.endswith(SCANNED_SUFFIXES):
            return
        path = os.path.abspath(path)
        if not self.is_open(path):  # an open document's text wins
            module_text_changed(self.server, path, None)
        if not self.started:
            return
        self._refresh(path)
        for dependant in module_index().dependants(path):  # closed importers read it on disk
            if not self.is_open(dependant):
                self._refresh(dependant, force=True)

    def _refresh(self, path: str, force: bool = False) -> None:
        uri = self.server.folders.folder_for(path)
        folder = self.folders.get(uri) if uri else None
        if folder is None:
            return
        task = asyncio.ensure_future(self._read(folder, path, force))
        self._refreshes.add(task)
        task.add_done_callback(self._refreshes.discard)

    def document_closed(self, uri: str, path: str) -> bool:
        """Show the on-disk result of a closed document; False when the scan does not cover it."""
        if self.mode_for(path) != "diagnostics":
            return False
        entry = self.entry(path)
        if entry is not None and entry.result is not None:
            if entry.uri != uri and not self.server.pull_diagnostics:
                self._publish(uri, [])  # the buffer's, under the client's spelling of the file
            self._report(entry)
        elif not self.server.pull_diagnostics:
            self._publish(uri, [])
        self.file_changed(path)  # the editor may have left it unsaved: read what is on disk
        return True

    # -- reporting ----------------------------------------------------------------------
    def _report(self, entry: IndexedFile) -> None:
        server = self.server
        if self.is_open(entry.path):
            return  # an open document's own analysis wins
        if server.pull_diagnostics:
            server.delivered.set()
        elif entry.diagnostics or entry.uri in self._pushed:
            self._publish(entry.uri, list(entry.diagnostics))

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        if diagnostics:
            self._pushed.add(uri)
        else:
            self._pushed.discard(uri)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri, diagnostics)
        )

    def _remove(self, folder: FolderIndex, path: str) -> None:
        entry = folder.files.pop(path, None)
        if entry is None or entry.result is None or self.is_open(entry.path):
            return
        if self.server.pull_diagnostics:
            self._tombstones[entry.uri] = DocumentResult(-1, 0).result_id
            self.server.delivered.set()
        elif entry.uri in self._pushed:
            self._publish(entry.uri, [])

    def _drop_folder(self, uri: str) -> None:
        folder = self.folders.pop(uri, None)
        if folder is not None:
            for path in list(folder.files):
                self._remove(folder, path)

    async def _watch(self) -> None:
        """Ask the client to report changes to Python files (once, when it can)."""
        from .lifecycle import _capability

        if self._watching or not _capability(
            self.server, "workspace", "did_change_watched_files", "dynamic_registration"
        ):
            return
        self._watching = True
        registration = types.Registration(
            id=WATCHER_ID,
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[types.FileSystemWatcher(glob_pattern="**/*.py")]
            ),
        )
        try:
            await self.server.client_register_capability_async(
                types.RegistrationParams([registration])
            )
        except Exception as error:
            log.info("the client refused the Python file watcher: %r", error)

    # -- torchward/workspaceIndex ---------------------------------------------------------
    def counts(self) -> dict[str, int]:
        entries = [entry for folder in self.folders.values() for entry in folder.files.values()]
        return {
            "folders": len(self.folders),
            "files": len(entries),
            "modules": sum(len(folder.modules()) for folder in self.folders.values()),
            "classes": sum(len(e.classes) for e in entries),
            "functions": sum(len(e.functions) for e in entries),
            "analysed": sum(e.report is not None for e in entries),
            "findings": sum(len(e.report.findings) for e in entries if e.report is not None),
        }

    def to_wire(self, with_files: bool = True) -> dict[str, Any]:
        running = self.task is not None and not self.task.done()
        folders = []
        for uri, root in self.server.folders.folders.items():
            folder = self.folders.get(uri)
            folders.append(
                {
                    "uri": uri,
                    "path": root,
                    "mode": folder.mode if folder else "off",
                    "state": folder.state if folder else "off",
                    "truncated": folder.truncated if folder else False,
                    "files": len(folder.files) if folder else 0,
                    "modules": [
                        {"name": name, "path": path}
                        for name, path in sorted(folder.modules().items())
                    ]
                    if folder
                    else [],
                }
            )
        answer: dict[str, Any] = {
            "state": "scanning" if running else ("done" if self.folders else "off"),
            "runs": self.runs,
            "counts": self.counts(),
            "folders": folders,
        }
        if with_files:
            answer["files"] = [
                entry.to_wire()
                for folder in self.folders.values()
                for _, entry in sorted(folder.files.items())
            ]
        return answer


def _same_file(path: str) -> str:
    """``path`` spelled as every other spelling of the same file is."""
    return os.path.normcase(os.path.abspath(path))


def _uri_of(path: str) -> str:
    from pygls.uris import from_fs_path

    return from_fs_path(path) or path


def _param(params: Any, name: str) -> Any:
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)


async def workspace_index(server: TorchwardServer, params: Any) -> dict[str, Any]:
    """``torchward/workspaceIndex``: ``{"wait": true}`` answers after the running scan ends."""
    if _param(params, "wait"):
        timeout = _param(params, "timeoutS")
        await server.scan.wait(float(timeout) if isinstance(timeout, (int, float)) else 60.0)
    return server.scan.to_wire(with_files=_param(params, "files") is not False)


def register(server: TorchwardServer) -> None:
    @server.feature(INDEX_REQUEST)
    async def index_request(params: Any) -> dict[str, Any]:
        return await workspace_index(server, params)
