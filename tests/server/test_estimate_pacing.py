"""The estimate of a document whose estimates take long waits for a longer pause.

An estimate cannot be stopped once it runs; on a very large script it takes seconds, and
started at every pause in typing it would hold a worker (and the interpreter's lock the
next keystroke's analysis needs). The scheduler waits twice the document's last estimate
before the next one, and never less than its usual quiet period.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from torchward.analysis import FileReport, LintSettings
from torchward.server import scheduler as scheduler_module
from torchward.server.estimates import GpuEstimate
from torchward.server.scheduler import Outcome, Scheduler, Snapshot

pytestmark = pytest.mark.asyncio

URI = "file:///project/train.py"
SLOW_S = 0.3


async def test_a_slow_estimate_lengthens_the_pause_before_the_next(monkeypatch):
    def analyse(snapshot: Snapshot, estimates=None) -> Outcome:
        return Outcome(snapshot, FileReport(snapshot.path), None, 0.0)

    started: list[float] = []

    def estimate_of(snapshot: Snapshot, estimates) -> GpuEstimate:
        started.append(time.perf_counter())
        time.sleep(SLOW_S)  # a very large script's estimate
        return GpuEstimate("none", None, reason="test")

    monkeypatch.setattr(scheduler_module, "analyse", analyse)
    monkeypatch.setattr(scheduler_module, "estimate_of", estimate_of)
    versions = [1]

    def snapshot(uri: str) -> Snapshot:
        return Snapshot(URI, "/project/train.py", versions[0], 0, "x = 1\n", LintSettings())

    delivered: list[tuple[float, GpuEstimate]] = []
    with ThreadPoolExecutor(1) as executor:
        scheduler = Scheduler(
            snapshot=snapshot,
            current_key=lambda uri: (versions[0], 0),
            deliver=lambda outcome: None,
            executor=executor,
            estimates=object(),  # type: ignore[arg-type]
            deliver_estimate=lambda s, e: delivered.append((time.perf_counter(), e)),
        )
        scheduler.estimate_quiet_s = 0.01
        assert scheduler.quiet_before_estimate(URI) == 0.01  # nothing measured yet
        scheduler.schedule(URI, 0.0)
        await _until(lambda: len(delivered) == 1)
        assert scheduler.quiet_before_estimate(URI) >= 2 * SLOW_S

        versions[0] = 2  # an edit: analysed at once, estimated only after the longer pause
        analysed_at = time.perf_counter()
        scheduler.schedule(URI, 0.0)
        await _until(lambda: len(delivered) == 2)
        assert started[1] - analysed_at >= 2 * SLOW_S

        scheduler.forget(URI)  # a closed document starts afresh
        assert scheduler.quiet_before_estimate(URI) == 0.01


async def _until(condition, timeout_s: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout_s
    while not condition():
        assert time.perf_counter() < deadline, "timed out"
        await asyncio.sleep(0.01)
