"""When documents are analysed: debounced, off the event loop, never out of date.

Each edit (re)starts a per-document timer of ``debounceMs``; when it fires, a snapshot
of the document (text, version, settings generation, analysis settings) is analysed on
a worker thread while the event loop keeps reading messages. At most one analysis per
document is in flight: an edit that arrives meanwhile does not start a second one; the
running one, when it finishes, sees that the version moved on, drops its result and
analyses the newest text. Only an outcome whose snapshot still matches the document is
delivered — a result for a version the client no longer has is never published.

Pull-diagnostic requests await :meth:`Scheduler.settled`, which resolves on the next
delivery for the document (or its closing).

The VRAM estimate is a second stage: it runs after the diagnostics are delivered (on
the same worker, only if the version is still current), so reading the run
configuration — another ``ast`` pass, about 40 ms at 1,000 lines — never delays the
squiggles, and it waits for :data:`ESTIMATE_QUIET_S` of quiet first: while the user
types, the next keystroke cancels it instead of competing with the next analysis. A
document whose estimate takes long waits longer (twice its last estimate): once started,
an estimate cannot be stopped, and on a 50,000-line script (seconds) it would hold a
worker — and the interpreter's lock the next keystroke's analysis needs — at every pause.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import FileReport, LintSettings, Problem

from .documents import EditLog
from .estimates import EstimateService, GpuEstimate
from .onsave import catch_up

log = logging.getLogger(__name__)

# 50,000 lines of typical training code is about 2 MB; ast parses that in well under a
# second (ARCHITECTURE.md: 27,820 lines in 0.62 s). Beyond this the document is not
# analysed and says so, rather than stalling the editor.
MAX_ANALYSED_CHARS = 4_000_000
BOM = "\ufeff"
# A pause in typing (keystrokes come 100-200 ms apart in a burst); the GPU fit of a
# status bar may lag that much, the squiggles may not.
ESTIMATE_QUIET_S = 0.25


@attrs.frozen
class Snapshot:
    uri: str
    path: str
    version: int
    generation: int
    text: str
    settings: LintSettings
    gpu: str | None = None
    estimator: bool = True
    on_save: Problem | None = None  # the notice of a document analysed on save (.onsave)
    edits: EditLog | None = attrs.field(default=None, eq=False)  # its edits since (.onsave)

    @property
    def key(self) -> tuple[int, int]:
        return (self.version, self.generation)


@attrs.frozen
class Outcome:
    snapshot: Snapshot
    report: FileReport
    estimate: GpuEstimate | None
    seconds: float
    carried: bool = False  # an overtaken analysis moved to the current version (.onsave)


_summaries = None


def summary_cache():
    """The session's incremental cache of function analyses (created on first use, so the
    server's start-up does not import the analysis): a keystroke re-analyses only the
    functions it could change."""
    global _summaries
    if _summaries is None:
        from torchward.analysis import SummaryCache

        _summaries = SummaryCache()
    return _summaries


def analyse(snapshot: Snapshot, estimates: EstimateService | None = None) -> Outcome:
    """Analyse one snapshot (runs on a worker thread); never raises."""
    from torchward.analysis import FileReport, Problem, analyze_source

    started = time.perf_counter()
    text = snapshot.text
    if "\x00" in text:
        report = FileReport(
            snapshot.path,
            (),
            (
                Problem(
                    "binary", "torchward: binary document (contains NUL characters), not analysed"
                ),
            ),
        )
    elif len(text) > MAX_ANALYSED_CHARS:
        message = f"torchward: document too large to analyse while editing ({len(text):,} characters; limit {MAX_ANALYSED_CHARS:,})"
        report = FileReport(snapshot.path, (), (Problem("too-large", message),))
    else:
        try:
            cache = summary_cache()
            if text.startswith(BOM):  # most editors strip it; one that does not still gets findings
                report = _after_bom(
                    analyze_source(text[1:], snapshot.path, snapshot.settings, cache)
                )
            else:
                report = analyze_source(text, snapshot.path, snapshot.settings, cache)
        except (
            Exception
        ) as error:  # the engine promises not to raise; the server does not rely on it
            log.exception("analysis of %s failed", snapshot.uri)
            report = FileReport(
                snapshot.path, (), (Problem("internal-error", f"analysis failed: {error!r}"),)
            )
    if snapshot.on_save is not None:
        report = attrs.evolve(report, problems=(*report.problems, snapshot.on_save))
    estimate = None
    if estimates is not None:
        estimate = estimate_of(snapshot, estimates)
    return Outcome(snapshot, report, estimate, time.perf_counter() - started)


def estimate_of(snapshot: Snapshot, estimates: EstimateService) -> GpuEstimate:
    """The GPU fit of one snapshot (runs on a worker thread); never raises."""
    text = snapshot.text
    if "\x00" in text or len(text) > MAX_ANALYSED_CHARS:
        return GpuEstimate("none", snapshot.gpu, reason="the document is not analysed")
    source = text.lstrip(BOM)
    # the lint's tree of this text, on loan: parsing again was a third of an estimate of a
    # large script. Taken, no edit's re-parse can shift it while the estimator reads it
    # (that analysis parses from scratch); given back unless a newer one arrived.
    cache = summary_cache() if snapshot.estimator else None
    taken = cache.take_tree(snapshot.path) if cache is not None else None
    tree = taken[1] if taken is not None and taken[0] == source else None
    try:
        return estimates.estimate(
            source,
            snapshot.path,
            snapshot.gpu,
            enabled=snapshot.estimator,
            project=snapshot.settings.estimator,
            tree=tree,
        )
    finally:
        if taken is not None:
            cache.give_back_tree(snapshot.path, *taken)  # type: ignore[union-attr]


def _timed_estimate(snapshot: Snapshot, estimates: EstimateService) -> tuple[GpuEstimate, float]:
    """:func:`estimate_of`, and the seconds it ran on its worker (not its wait for one)."""
    started = time.perf_counter()
    estimate = estimate_of(snapshot, estimates)
    return estimate, time.perf_counter() - started


WARM_UP_SOURCE = "import torch\n\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"
# a job the estimator sizes: its catalogs (models, GPUs) load here, not at the first hover
WARM_UP_JOB = (
    "import torch\nfrom transformers import AutoModelForCausalLM\n"
    "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
    "optimizer = torch.optim.AdamW(model.parameters())\n"
)


def warm_up() -> None:
    """Import the engine and its rules off the event loop, before the first document.

    The server answers ``initialize`` before the analysis package is imported (start-up
    time: lsprotocol alone takes most of the budget); this runs on a worker right after,
    while the client is still sending ``initialized`` and opening its first document.
    """
    try:
        from torchward.analysis import LintSettings, analyze_source

        analyze_source(WARM_UP_SOURCE, "<warm-up>", LintSettings())
    except Exception:  # the first real analysis reports what is wrong
        log.exception("warming up the analysis failed")
    try:  # the first estimate would load the catalogs: 10-30 ms of its 50
        from .estimates import estimate_source

        estimate_source(WARM_UP_JOB, "<warm-up>", None)
    except Exception:  # the first real estimate reports what is wrong
        log.exception("warming up the estimator failed")
    gc.freeze()  # the engine's modules live as long as the process (see launcher.serve)


def _after_bom(report: FileReport) -> FileReport:
    """Move first-line columns one to the right: the analysed text lacked the leading BOM."""
    from torchward.analysis import Span

    def moved(span: Span | None) -> Span | None:
        if span is None or span.line != 1:
            return span
        return Span(
            1, span.column + 1, span.end_line, span.end_column + (1 if span.end_line == 1 else 0)
        )

    findings = tuple(
        attrs.evolve(
            f,
            span=moved(f.span),
            evidence=tuple(
                attrs.evolve(e, span=moved(e.span)) if e.path is None else e for e in f.evidence
            ),
            fixes=tuple(
                attrs.evolve(
                    fix,
                    edits=tuple(attrs.evolve(edit, span=moved(edit.span)) for edit in fix.edits),
                )
                for fix in f.fixes
            ),
        )
        for f in report.findings
    )
    problems = tuple(attrs.evolve(p, span=moved(p.span)) for p in report.problems)
    return attrs.evolve(report, findings=findings, problems=problems)


class Scheduler:
    def __init__(
        self,
        *,
        snapshot: Callable[[str], Snapshot | None],
        current_key: Callable[[str], tuple[int, int] | None],
        deliver: Callable[[Outcome], None],
        executor: Executor,
        estimates: EstimateService | None = None,
        deliver_estimate: Callable[[Snapshot, GpuEstimate], None] | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._current_key = current_key
        self._deliver = deliver
        self._executor = executor
        self._estimates = estimates
        self._deliver_estimate = deliver_estimate
        self.estimate_quiet_s = ESTIMATE_QUIET_S
        self._estimate_seconds: dict[str, float] = {}  # each document's last estimate took
        self._tasks: dict[str, asyncio.Task] = {}
        self._analysing: set[str] = set()
        # documents whose inputs changed while they were being analysed with the same text
        # (a module they import was edited): the running analysis may have read the old
        # module, so it runs again when it ends
        self._inputs_changed: set[str] = set()
        self._waiters: dict[str, list[asyncio.Future]] = {}

    def schedule(self, uri: str, delay_s: float) -> None:
        """Analyse ``uri`` after ``delay_s`` of quiet (restarting any pending timer)."""
        task = self._tasks.get(uri)
        if task is not None and not task.done():
            if uri in self._analysing:
                self._inputs_changed.add(uri)
                return  # the running analysis re-runs on the newest inputs when it ends
            task.cancel()
        self._tasks[uri] = asyncio.ensure_future(self._run(uri, delay_s))

    def is_pending(self, uri: str) -> bool:
        task = self._tasks.get(uri)
        return task is not None and not task.done()

    def busy(self) -> bool:
        """Whether an open document is being analysed now (the workspace scan waits for it)."""
        return bool(self._analysing)

    def settled(self, uri: str) -> asyncio.Future:
        """A future resolved at the next delivery for ``uri`` (or when it is forgotten)."""
        future = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(uri, []).append(future)
        return future

    def quiet_before_estimate(self, uri: str) -> float:
        """The pause in typing that starts ``uri``'s estimate: :data:`ESTIMATE_QUIET_S`, or
        twice what its last estimate took when that is longer."""
        return max(self.estimate_quiet_s, 2 * self._estimate_seconds.get(uri, 0.0))

    def forget(self, uri: str) -> None:
        self._inputs_changed.discard(uri)
        self._estimate_seconds.pop(uri, None)
        task = self._tasks.pop(uri, None)
        if task is not None and uri not in self._analysing:
            task.cancel()
        self._wake(uri)

    def _wake(self, uri: str) -> None:
        for future in self._waiters.pop(uri, []):
            if not future.done():
                future.set_result(None)

    async def _estimate(self, uri: str, snapshot: Snapshot) -> None:
        if self._estimates is None or self._deliver_estimate is None:
            return
        await asyncio.sleep(self.quiet_before_estimate(uri))
        if self._current_key(uri) != snapshot.key:
            return
        loop = asyncio.get_running_loop()
        estimate, seconds = await loop.run_in_executor(
            self._executor, _timed_estimate, snapshot, self._estimates
        )
        self._estimate_seconds[uri] = seconds
        if self._current_key(uri) == snapshot.key:
            self._deliver_estimate(snapshot, estimate)

    async def _run(self, uri: str, delay_s: float) -> None:
        loop = asyncio.get_running_loop()
        try:
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            while True:
                snapshot = self._snapshot(uri)
                if snapshot is None:
                    return
                self._analysing.add(uri)
                self._inputs_changed.discard(uri)
                try:
                    outcome = await loop.run_in_executor(self._executor, analyse, snapshot, None)
                finally:
                    self._analysing.discard(uri)
                if self._current_key(uri) == snapshot.key:
                    self._deliver(outcome)
                    if uri in self._inputs_changed:
                        continue  # current text, but it may have read a module's old text
                    self._wake(uri)
                    await self._estimate(uri, snapshot)
                    return
                caught_up = catch_up(outcome, self._current_key(uri))
                if caught_up is not None:  # analysed on save only: no edit starts another
                    self._deliver(caught_up)
                    self._wake(uri)
                    return
                log.debug("dropped the result for %s version %s: overtaken", uri, snapshot.version)
                if self._current_key(uri) is None:
                    return
                if delay_s > 0:
                    await asyncio.sleep(delay_s)
        except asyncio.CancelledError:
            raise
        except Exception:  # a failure here must not leave pull requests hanging
            log.exception("scheduling the analysis of %s failed", uri)
        finally:
            if self._tasks.get(uri) is asyncio.current_task():
                self._tasks.pop(uri, None)
                self._wake(uri)
