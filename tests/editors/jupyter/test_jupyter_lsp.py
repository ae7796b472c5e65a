"""JupyterLab's language-server bridge (jupyter-lsp, the server half of jupyterlab-lsp)
starts torchward from docs/editors.md's configuration and carries its diagnostics.

The configuration is read from the documentation and written where the page says
(``jupyter_server_config.json`` in the Jupyter config folder); jupyter-lsp's own manager
loads and validates it against its spec schema, and its own websocket handler — the one
JupyterLab's browser side talks to — starts the server and relays the messages. The
browser is played by the test: it sends what jupyterlab-lsp sends for a notebook (one
virtual Python document, the cells in order) and reads the diagnostics back. Skipped
without jupyter-lsp (``pip install 'torchward[editors]'``).
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import sys

import pytest

jupyter_lsp = pytest.importorskip("jupyter_lsp", reason="pip install 'torchward[editors]'")

from jupyter_lsp.handlers import LanguageServerWebSocketHandler  # noqa: E402
from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine  # noqa: E402
from tornado.web import Application  # noqa: E402

DOCS = pathlib.Path(__file__).parents[3] / "docs" / "editors.md"
TIMEOUT_S = 60

# a notebook as jupyterlab-lsp hands it over: the cells of the notebook, in order, as one
# virtual document; the model and loader come from the first cell, the loop from the second
CELLS = (
    "import torch\nfrom transformers import AutoModelForCausalLM\n\n"
    "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
    "optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)\n",
    "losses = []\nfor x, y in loader:\n    optimizer.zero_grad()\n"
    "    loss = torch.nn.functional.cross_entropy(model(x), y)\n"
    "    losses.append(loss)\n    loss.backward()\n    optimizer.step()\n",
)


def documented_config() -> dict:
    """The JSON of docs/editors.md's JupyterLab section."""
    section = DOCS.read_text().split("## JupyterLab", 1)[1]
    return json.loads(re.search(r"```json\n(.*?)```", section, re.DOTALL).group(1))


class Browser(LanguageServerWebSocketHandler):
    """JupyterLab's side of jupyter-lsp's websocket: sends messages, keeps the answers."""

    def __init__(self, manager) -> None:  # no tornado application around it
        line = RequestStartLine("GET", "/lsp/ws/torchward", "HTTP/1.1")
        headers = HTTPHeaders({"Host": "localhost:8888"})
        self.request = HTTPServerRequest(start_line=line, headers=headers)
        self.application = Application()
        self.initialize(manager)
        self.received: asyncio.Queue = asyncio.Queue()

    def write_message(self, message, binary=False):  # the server's messages, relayed
        self.received.put_nowait(json.loads(message))

    def send_ping(self, data=b""):
        pass

    async def send(self, message: dict) -> None:
        await self.on_message(json.dumps({"jsonrpc": "2.0", **message}))

    async def answer(self, request_id: int) -> dict:
        while True:
            message = await asyncio.wait_for(self.received.get(), TIMEOUT_S)
            if message.get("id") == request_id and "method" not in message:
                return message

    async def diagnostics(self, uri: str) -> list[dict]:
        while True:
            message = await asyncio.wait_for(self.received.get(), TIMEOUT_S)
            params = message.get("params") or {}
            if message.get("method") == "textDocument/publishDiagnostics" and (
                params.get("uri") == uri and params.get("diagnostics")
            ):
                return params["diagnostics"]


def test_the_documented_spec_starts_torchward_lsp():
    spec = documented_config()["LanguageServerManager"]["language_servers"]["torchward"]
    assert spec["argv"] == ["torchward", "lsp"] and "python" in spec["languages"]


@pytest.mark.asyncio
async def test_jupyter_lsp_loads_the_documented_config_and_relays_torchward(tmp_path, monkeypatch):
    config = documented_config()
    servers = config["LanguageServerManager"]["language_servers"]
    servers["torchward"]["argv"] = [sys.executable, "-m", "torchward", "lsp"]
    folder = tmp_path / "jupyter-config"
    folder.mkdir()
    (folder / "jupyter_server_config.json").write_text(json.dumps(config))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(folder))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(folder))
    from jupyter_lsp import LanguageServerManager

    manager = LanguageServerManager(autodetect=False)
    manager.initialize()  # loads and validates the spec (jupyter-lsp's schema)
    assert set(manager.language_servers) == {"torchward"}
    session = manager.sessions["torchward"]

    browser = Browser(manager)
    await browser.open("torchward")  # starts the server, as opening a notebook does
    try:
        assert session.process is not None
        root = tmp_path.as_uri()
        await browser.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": root, "capabilities": {}},
            }
        )
        answer = await browser.answer(1)
        assert answer["result"]["serverInfo"]["name"] == "torchward"
        await browser.send({"method": "initialized", "params": {}})
        uri = f"{root}/.virtual_documents/train.py"  # its name does not matter to torchward
        text = "\n\n".join(CELLS)
        document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        await browser.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
        found = await browser.diagnostics(uri)
        tw001 = [d for d in found if d["code"] == "TW001"]
        assert tw001 and tw001[0]["source"] == "torchward"
        # the loss kept in the second cell, found with the names of the first
        assert text.splitlines()[tw001[0]["range"]["start"]["line"]].strip() == (
            "losses.append(loss)"
        )
    finally:
        browser.on_close()  # the last handler gone: jupyter-lsp stops the server
    assert session.process is None
