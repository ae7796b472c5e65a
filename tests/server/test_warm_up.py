"""The server's warm-up loads what the first estimate would otherwise pay for.

The warm-up runs on a worker right after ``initialize``; besides the engine, it now sizes a
tiny job, so the model and GPU catalogs are loaded before the first hover or status bar
asks (the first estimate of a real script: about 50 ms cold, 20-30 once they are loaded).
Checked in a fresh interpreter: this test process has long loaded them.
"""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import torchward.estimator.architecture as architecture
from torchward.server.scheduler import warm_up
before = architecture._index.cache_info().currsize
warm_up()
print(before, architecture._index.cache_info().currsize)
"""


def test_the_warm_up_loads_the_estimators_catalogs():
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120, check=True
    )
    before, after = done.stdout.split()
    assert (before, after) == ("0", "1"), done.stderr
