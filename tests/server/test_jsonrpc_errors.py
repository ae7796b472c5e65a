"""Every malformed message gets a JSON-RPC error, fast, and the server keeps serving.

Over a real stdio connection to ``python -m torchward.server`` (raw bytes, no LSP
client library in between, so nothing is fixed up on the way): each case below sends
one malformed message, expects the error reply it deserves (code, and the request's id
when it had a readable one) within 1 s, and then a valid request must still be answered
within 1 s. Framing faults — a ``Content-Length`` too large, too small, not a number,
missing — must not leave the server deaf either.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time

import pytest

REPLY_S = 1.0
START_S = 30.0  # starting the interpreter and importing lsprotocol on a loaded machine

HOVER = {"textDocument": {"uri": "file:///nowhere.py"}, "position": {"line": 0, "character": 0}}


def frame(body: bytes | str, length: int | str | None = None) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    header = (
        b""
        if length == "none"
        else f"Content-Length: {len(data) if length is None else length}\r\n\r\n".encode()
    )
    return header + data


def request(msg_id, method: str, params=None) -> str:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


class Connection:
    """The server process and a reader of its framed replies."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "torchward.server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.replies: queue.Queue[dict] = queue.Queue()
        self.logs: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line == b"\r\n":
                    break
            message = json.loads(stream.read(length))
            if "method" in message:
                if message.get("method") == "window/logMessage":
                    self.logs.append(message["params"])
                continue  # notifications and requests from the server
            self.replies.put(message)

    def send(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def reply(self, timeout: float = REPLY_S) -> dict:
        return self.replies.get(timeout=timeout)

    def close(self) -> None:
        try:
            self.send(frame(request(9999, "shutdown")))
            self.send(frame(json.dumps({"jsonrpc": "2.0", "method": "exit"})))
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()


@pytest.fixture(scope="module")
def connection():
    connection = Connection()
    connection.send(
        frame(request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}))
    )
    assert connection.reply(START_S)["id"] == 1
    connection.send(frame(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}})))
    yield connection
    connection.close()


NEXT_ID = iter(range(100, 10_000))


def assert_still_serving(connection: Connection) -> None:
    msg_id = next(NEXT_ID)
    started = time.monotonic()
    connection.send(frame(request(msg_id, "textDocument/hover", HOVER)))
    reply = connection.reply()
    assert reply == {"jsonrpc": "2.0", "id": msg_id, "result": None}
    assert time.monotonic() - started < REPLY_S


CASES = {
    # parse errors: -32700, id null
    "invalid JSON": (frame('{"jsonrpc": "2.0", "id": 5, "method": '), -32700, None),
    "not UTF-8": (frame(b'{"jsonrpc": "2.0", "id": 5, "method": "\xff"}'), -32700, None),
    # invalid requests: -32600
    "batch": (frame("[" + request(6, "textDocument/hover", HOVER) + "]"), -32600, None),
    "empty batch": (frame("[]"), -32600, None),
    "scalar number": (frame("42"), -32600, None),
    "scalar string": (frame('"hover please"'), -32600, None),
    "null": (frame("null"), -32600, None),
    "no jsonrpc member": (frame('{"id": 7, "method": "textDocument/hover"}'), -32600, 7),
    "wrong jsonrpc version": (
        frame('{"jsonrpc": "1.0", "id": 8, "method": "shutdown"}'),
        -32600,
        8,
    ),
    "method not a string": (frame('{"jsonrpc": "2.0", "id": 9, "method": 17}'), -32600, 9),
    "id an object": (
        frame('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}'),
        -32600,
        None,
    ),
    "params a scalar": (frame(request(10, "textDocument/hover", 5)), -32600, 10),
    "neither request nor response": (frame('{"jsonrpc": "2.0", "id": 11}'), -32600, 11),
    # invalid params: -32602, the request's id
    "position a string": (
        frame(
            request(12, "textDocument/hover", {**HOVER, "position": {"line": 0, "character": "5"}})
        ),
        -32602,
        12,
    ),
    "position a float": (
        frame(
            request(13, "textDocument/hover", {**HOVER, "position": {"line": 0.5, "character": 1}})
        ),
        -32602,
        13,
    ),
    "negative position": (
        frame(
            request(14, "textDocument/hover", {**HOVER, "position": {"line": -1, "character": 0}})
        ),
        -32602,
        14,
    ),
    "negative range in a code action": (
        frame(
            request(
                15,
                "textDocument/codeAction",
                {
                    "textDocument": {"uri": "file:///nowhere.py"},
                    "range": {
                        "start": {"line": 0, "character": 0},
                        "end": {"line": 0, "character": -3},
                    },
                    "context": {"diagnostics": []},
                },
            )
        ),
        -32602,
        15,
    ),
    "missing params": (frame(request(16, "textDocument/hover")), -32602, 16),
    "params missing a member": (
        frame(request(17, "textDocument/hover", {"position": {"line": 0, "character": 0}})),
        -32602,
        17,
    ),
    "string id, bad params": (frame(request("abc", "textDocument/hover", {})), -32602, "abc"),
    # method not found
    "unknown method": (frame(request(18, "torchward/noSuchThing", {})), -32601, 18),
    # framing faults: a parse error, and the next message is still read
    "Content-Length too large": (
        frame(request(19, "textDocument/hover", HOVER), 4096),
        -32700,
        None,
    ),
    "Content-Length too small": (frame(request(20, "textDocument/hover", HOVER), 10), -32700, None),
    "Content-Length not a number": (
        b"Content-Length: abc\r\n\r\n" + request(21, "textDocument/hover", HOVER).encode(),
        -32700,
        None,
    ),
    "no Content-Length": (
        frame(request(22, "textDocument/hover", HOVER), "none") + b"\r\n",
        -32700,
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_malformed_message_gets_an_error_and_the_server_keeps_serving(connection, case):
    data, code, msg_id = CASES[case]
    started = time.monotonic()
    connection.send(data)
    if "Content-Length" in case:
        # a broken frame is only known to be broken (or fully skipped) when the next
        # message arrives
        assert_still_serving_after_error(connection, code)
        return
    reply = connection.reply()
    assert time.monotonic() - started < REPLY_S
    assert reply["jsonrpc"] == "2.0" and "result" not in reply
    assert reply["error"]["code"] == code, reply
    assert reply["id"] == msg_id
    assert isinstance(reply["error"]["message"], str) and reply["error"]["message"]
    assert_still_serving(connection)


def assert_still_serving_after_error(connection: Connection, code: int) -> None:
    msg_id = next(NEXT_ID)
    started = time.monotonic()
    connection.send(frame(request(msg_id, "textDocument/hover", HOVER)))
    errors, answer = [], None
    while answer is None:
        reply = connection.reply()
        if reply.get("id") == msg_id:
            answer = reply
        else:
            errors.append(reply)
    assert answer == {"jsonrpc": "2.0", "id": msg_id, "result": None}
    assert time.monotonic() - started < REPLY_S
    assert errors and all(e.get("error", {}).get("code") == code for e in errors), errors
    assert all(e["id"] is None for e in errors)  # no part of a broken frame was run


def test_a_notification_with_invalid_params_is_logged_not_answered(connection):
    bad = {
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": 5}},
    }
    logged = len(connection.logs)
    connection.send(frame(json.dumps(bad)))
    assert_still_serving(connection)
    assert any("textDocument/didOpen" in log["message"] for log in connection.logs[logged:])
