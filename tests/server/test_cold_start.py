"""Start-up: the server answers ``initialize`` before it imports the engine.

Importing the analysis costs about half a second (bench/cold_start.py measures the whole
cold start); ``create_server`` must not pay it: every feature module imports the engine
inside the functions that use it, and the warm-up loads it on a worker after
``initialize`` (docs/design/server.md, "Start-up"). A fresh interpreter catches an
import that arrives indirectly, through another module.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from harness import REAL_SERVER, session

HEAVY = ("torchward.analysis", "torchward.estimator", "torchward.notebook", "libcst", "torch")


def test_creating_the_server_imports_neither_the_engine_nor_the_estimator():
    script = (
        "import sys\n"
        "from torchward.server.server import create_server\n"
        "create_server()\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {{'torch', 'libcst'}}"
        f" or m.startswith({HEAVY[:3]!r})))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout.strip()
    assert found == "[]", f"imported at start-up: {found}"


async def _progress_of(editor, token: str):
    for _ in range(3000):
        reports = editor.client.progress_reports.get(token) or []
        if reports and type(reports[-1]).__name__ == "WorkDoneProgressEnd":
            return reports
        await asyncio.sleep(0.01)
    return editor.client.progress_reports.get(token) or []


@pytest.mark.asyncio
async def test_the_engine_loading_is_shown_as_progress():
    async with session("vscode-1.96", server=REAL_SERVER) as editor:
        reports = await _progress_of(editor, "torchward-warm-up")
        kinds = [type(report).__name__ for report in reports]
        assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
        assert reports[0].title == "torchward: loading the analysis engine"
