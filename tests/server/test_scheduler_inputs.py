"""A document re-linted because a module it imports changed, while its analysis runs.

The document's own text (its version) does not move, so "is the result current?" says
yes; but the running analysis may have read the module's old text. The scheduler must
run it again rather than keep a result computed from stale inputs (the cross-file
server test caught this as an intermittent 'TW003 stayed').
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from torchward.analysis import FileReport, LintSettings
from torchward.server import scheduler as scheduler_module
from torchward.server.scheduler import Outcome, Scheduler, Snapshot

pytestmark = pytest.mark.asyncio

URI = "file:///project/train.py"


async def test_an_import_changed_during_the_analysis_runs_it_again(monkeypatch):
    module_text = ["old helper"]
    started, release = threading.Event(), threading.Event()
    read: list[str] = []

    def analyse(snapshot: Snapshot, estimates=None) -> Outcome:
        read.append(module_text[0])  # what this analysis saw of the imported module
        started.set()
        release.wait(10)
        return Outcome(snapshot, FileReport(snapshot.path), None, 0.0)

    monkeypatch.setattr(scheduler_module, "analyse", analyse)
    delivered: list[Outcome] = []
    snapshot = Snapshot(URI, "/project/train.py", 1, 0, "import helpers\n", LintSettings())
    with ThreadPoolExecutor(1) as executor:
        scheduler = Scheduler(
            snapshot=lambda uri: snapshot,
            current_key=lambda uri: snapshot.key,  # the document itself never changes
            deliver=delivered.append,
            executor=executor,
        )
        scheduler.schedule(URI, 0.0)
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        module_text[0] = "new helper"  # the helper module is edited meanwhile ...
        scheduler.schedule(URI, 0.0)  # ... and the server re-lints its importer
        release.set()
        await asyncio.wait_for(scheduler.settled(URI), 10)
    assert read == ["old helper", "new helper"]
    assert len(delivered) == 2
