"""Shared servers: starting one costs about a second (mostly importing lsprotocol), so
tests that need no settings of their own share one server per client profile and
module, each on documents no other test opens (``harness.fresh_uri``)."""

import contextlib
import pathlib
import sys

import pytest_asyncio

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from harness import session  # noqa: E402


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editors():
    async with contextlib.AsyncExitStack() as stack:
        started = {}

        async def editor(name: str = "vscode-1.96"):
            if name not in started:
                started[name] = await stack.enter_async_context(session(name))
            return started[name]

        yield editor
