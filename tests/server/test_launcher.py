"""``torchward lsp``: the CLI subcommand starts the server; bad transports are usage errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from harness import session

pytestmark = pytest.mark.asyncio


async def test_the_cli_subcommand_serves_lsp_over_stdio():
    async with session("neovim-0.7", server=[sys.executable, "-m", "torchward", "lsp"]) as editor:
        assert editor.result.server_info.name == "torchward"
        capabilities = editor.result.capabilities
        assert capabilities.text_document_sync.change == 2  # incremental
        assert capabilities.hover_provider and capabilities.code_action_provider
        assert set(capabilities.execute_command_provider.commands) == {
            "torchward.explain",
            "torchward.selectGpu",
            "torchward.whyNoJob",
            "torchward.measure",  # "Measure with your model (runs your code)": server/profiling.py
            "torchward.cancelMeasure",
            "torchward.installTorch",  # Measure's stand-in without torch: server/torch_probe.py
            "torchward.showGpuFit",  # the GPU fit shown to any client: server/commands.py
            "torchward.plan",  # the cheapest GPU plan: server/plan.py
            "torchward.choosePlan",  # a plan's instance becomes the GPU: server/plan.py
        }


def test_a_malformed_tcp_address_is_a_usage_error():
    done = subprocess.run(
        [sys.executable, "-m", "torchward", "lsp", "--tcp", "nowhere"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "HOST:PORT" in done.stderr
