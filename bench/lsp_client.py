"""A bare LSP client over stdio for the latency benchmark (bench/bench_lsp.py).

Deliberately not pygls or pytest-lsp: the benchmark measures the *server*, so the client
does as little as possible — frames JSON-RPC by ``Content-Length``, resolves responses by
id, answers the few requests servers send (configuration, registrations, progress) and
timestamps every ``textDocument/publishDiagnostics`` on arrival, keyed by (uri, version).
It declares no pull-diagnostics capability, so torchward and ``ruff server`` both push,
and the two are measured the same way.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from typing import Any

CAPABILITIES = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "synchronization": {"didSave": True},
        "publishDiagnostics": {
            "relatedInformation": True,
            "versionSupport": True,
            "dataSupport": True,
        },
        "codeAction": {
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}
        },
        "hover": {"contentFormat": ["markdown", "plaintext"]},
    },
    "workspace": {"configuration": True, "workspaceFolders": True},
    "window": {"workDoneProgress": True},
}


class Client:
    def __init__(self, process: asyncio.subprocess.Process, settings: dict[str, Any]) -> None:
        self.process = process
        self.settings = settings
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future] = {}
        self.published: dict[tuple[str, int | None], float] = {}
        self.arrived = asyncio.Event()
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(
        cls, command: list[str], settings: dict[str, Any], env: dict[str, str] | None = None
    ) -> Client:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env or os.environ.copy(),
            limit=1 << 26,
        )
        return cls(process, settings)

    # -- wire --------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = 0
            while True:
                line = await stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            message = json.loads(await stream.readexactly(length))
            self._dispatch(message, time.perf_counter())

    def _dispatch(self, message: dict[str, Any], now: float) -> None:
        method = message.get("method")
        if method is None:
            future = self.pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result((message.get("result"), message.get("error"), now))
            return
        if "id" in message:  # a request from the server
            params = message.get("params") or {}
            result: Any = None
            if method == "workspace/configuration":
                result = [self.settings for _ in params.get("items", [])]
            self._send({"id": message["id"], "result": result})
            return
        if method == "textDocument/publishDiagnostics":
            params = message["params"]
            self.published.setdefault((params["uri"], params.get("version")), now)
            self.arrived.set()

    async def request(self, method: str, params: Any, timeout: float = 60.0) -> tuple[Any, float]:
        """The result and the arrival time of the response."""
        ident = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.pending[ident] = future
        self._send({"id": ident, "method": method, "params": params})
        result, error, arrived = await asyncio.wait_for(future, timeout)
        if error:
            raise RuntimeError(f"{method}: {error}")
        return result, arrived

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    # -- LSP -----------------------------------------------------------------------------
    async def initialize(self, root_uri: str, options: dict[str, Any] | None = None) -> float:
        """Send ``initialize`` (and ``initialized``); returns when the reply arrived."""
        _, arrived = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root_uri,
                "capabilities": CAPABILITIES,
                "initializationOptions": options or {},
                "workspaceFolders": [{"uri": root_uri, "name": "bench"}],
            },
        )
        self.notify("initialized", {})
        return arrived

    async def diagnostics_at(self, uri: str, version: int, timeout: float = 60.0) -> float:
        """When diagnostics for ``uri`` at ``version`` arrived (waiting for them)."""
        deadline = time.perf_counter() + timeout
        while (uri, version) not in self.published:
            self.arrived.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except asyncio.TimeoutError:
                pass
        return self.published[(uri, version)]

    def open(self, uri: str, text: str, version: int = 1) -> float:
        sent = time.perf_counter()
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )
        return sent

    def change(
        self,
        uri: str,
        version: int,
        line: int,
        character: int,
        text: str,
        end_character: int | None = None,
    ) -> float:
        end = character if end_character is None else end_character
        sent = time.perf_counter()
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": line, "character": character},
                            "end": {"line": line, "character": end},
                        },
                        "text": text,
                    }
                ],
            },
        )
        return sent

    def close(self, uri: str) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def rss_bytes(self) -> int | None:
        try:
            with open(f"/proc/{self.process.pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    async def stop(self) -> None:
        try:
            await self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            await asyncio.wait_for(self.process.wait(), 10)
        except Exception:
            if self.process.returncode is None:
                self.process.kill()
                await self.process.wait()
        self.reader.cancel()
