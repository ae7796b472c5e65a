"""Over a real stdio connection to ``python -m torchward.server`` (raw bytes): a message
over the size limit is answered or logged and the server keeps serving; after
``shutdown`` every request gets ``InvalidRequest`` and ``exit`` still ends the process."""

from __future__ import annotations

import json
import time

import pytest
from test_jsonrpc_errors import HOVER, START_S, Connection, assert_still_serving, frame, request

LIMIT = 100_000


def initialised() -> Connection:
    connection = Connection()
    connection.send(
        frame(request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}))
    )
    assert connection.reply(START_S)["id"] == 1
    connection.send(frame(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}})))
    return connection


@pytest.fixture
def limited(monkeypatch):
    monkeypatch.setenv("TORCHWARD_MAX_MESSAGE_BYTES", str(LIMIT))
    connection = initialised()
    yield connection
    connection.close()


def did_open(size: int, msg_id: int | None = None) -> str:
    message: dict = {"jsonrpc": "2.0"}
    if msg_id is not None:
        message["id"] = msg_id
    message["method"] = "textDocument/didOpen" if msg_id is None else "textDocument/hover"
    message["params"] = {
        "textDocument": {"uri": "file:///big.py", "languageId": "python", "version": 1},
        "position": {"line": 0, "character": 0},
        "text": "x = 1\n" * (size // 6),
    }
    return json.dumps(message)


def test_a_request_over_the_size_limit_gets_an_error_with_its_id(limited):
    limited.send(frame(did_open(3 * LIMIT, msg_id=41)))
    reply = limited.reply(5.0)
    assert reply["id"] == 41 and reply["error"]["code"] == -32600
    assert "TORCHWARD_MAX_MESSAGE_BYTES" in reply["error"]["message"]
    assert_still_serving(limited)


def test_a_request_under_the_limit_is_served(limited):
    limited.send(frame(request(42, "textDocument/hover", {**HOVER, "pad": "y" * (LIMIT // 2)})))
    assert limited.reply(5.0) == {"jsonrpc": "2.0", "id": 42, "result": None}


def test_a_notification_over_the_size_limit_is_logged_and_dropped(limited):
    logged = len(limited.logs)
    limited.send(frame(did_open(3 * LIMIT)))
    assert_still_serving(limited)  # no error reply came before the hover's answer
    deadline = time.monotonic() + 5.0
    while len(limited.logs) == logged and time.monotonic() < deadline:
        time.sleep(0.01)
    assert any("more than TORCHWARD_MAX_MESSAGE_BYTES" in log["message"] for log in limited.logs)


def test_requests_after_shutdown_get_invalid_request_and_exit_ends_the_process():
    connection = initialised()
    try:
        connection.send(frame(request(2, "shutdown")))
        assert connection.reply(5.0) == {"jsonrpc": "2.0", "id": 2, "result": None}
        connection.send(frame(request(3, "textDocument/hover", HOVER)))
        reply = connection.reply(5.0)
        assert reply["id"] == 3 and reply["error"]["code"] == -32600, reply
        assert "shutdown" in reply["error"]["message"]
        connection.send(frame(request("again", "shutdown")))
        assert connection.reply(5.0)["error"]["code"] == -32600
        connection.send(frame(json.dumps({"jsonrpc": "2.0", "method": "exit"})))
        assert connection.process.wait(timeout=10) == 0
    finally:
        if connection.process.poll() is None:
            connection.process.kill()
