"""Start-up: the server answers ``initialize`` before it imports the engine.

Importing the analysis costs about half a second (bench/cold_start.py measures the whole
cold start); ``create_server`` must not pay it: every feature module imports the engine
inside the functions that use it, and the warm-up loads it on a worker after
``initialize`` (docs/design/server.md, "Start-up"). A fresh interpreter catches an
import that arrives indirectly, through another module.
"""

from __future__ import annotations

import subprocess
import sys

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
