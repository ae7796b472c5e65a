"""Cutting the client's byte stream into LSP messages, in time linear in its length.

Each message is a header block (``Content-Length: N``, maybe other headers, a blank
line) and ``N`` bytes of body. A body never contains a raw ``Content-Length:`` header
line (JSON escapes line breaks inside strings, and the header's letters are not JSON
outside them), so a header line seen inside an expected body proves the declared length
wrong: the bytes before it are a broken message and reading resumes at that header.
Bytes that are not a header block are skipped up to the next header.

Why it is written this way: the first version searched the whole buffer for a header
and copied the partial body on every 64 KiB read, so a 16 MB message took 14.7 s to get
through (quadratic). Here each byte is searched once (plus a :data:`_OVERLAP` of bytes
a header line can straddle), bodies are sliced once, and consumed bytes are deleted
from the front of the ``bytearray`` (which CPython does without moving the rest).

A body over the message-size limit is not kept: its bytes are searched for a header
line and dropped as they arrive, and only its first and last :data:`_KEEP` bytes are
handed to ``on_oversized``, enough to read a request's ``id`` there
(:func:`oversized_message_id`) and answer it with an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_HEADER = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r\n(?:[!-9;-~]+:[^\r\n]*\r\n)*\r\n", re.I)
# a header line inside a body; bounded, so that a search can resume :data:`_OVERLAP`
# bytes before where the previous one stopped and still find every such line once
_HEADER_LINE = re.compile(rb"Content-Length:[ \t]{0,16}\d{1,20}[ \t]{0,16}\r\n", re.I)
_OVERLAP = 15 + 16 + 20 + 16 + 2  # the longest _HEADER_LINE match
_MAX_HEADER_BLOCK = 1 << 16  # a header block still unfinished after this many bytes is junk
_KEEP = 1 << 16  # of an oversized body: the head and tail kept to find its id


@dataclass
class _Body:
    """A body being received: where it starts in the buffer, how long it says it is, and
    how far it has been searched for a header line (``searched``: no header line starts
    before it)."""

    start: int
    length: int
    searched: int


@dataclass
class _Skipped:
    """An oversized body being dropped as it arrives (the buffer starts inside it)."""

    length: int
    remaining: int  # bytes of it not yet dropped from the buffer
    searched: int = 0
    head: bytes | None = None


class Framer:
    """Cuts a byte stream into message bodies; reports what cannot be a message.

    ``on_body(body)`` gets each complete body, ``on_junk(reason)`` each broken frame,
    ``on_oversized(length, head, tail)`` each body longer than ``limit`` bytes."""

    def __init__(
        self,
        on_body: Callable[[bytes], None],
        on_junk: Callable[[str], None],
        on_oversized: Callable[[int, bytes, bytes], None],
        limit: int,
    ) -> None:
        self.buffer = bytearray()
        self.on_body = on_body
        self.on_junk = on_junk
        self.on_oversized = on_oversized
        self.limit = limit
        self._body: _Body | None = None
        self._skipped: _Skipped | None = None

    @property
    def waiting(self) -> bool:
        """A message has begun and not ended (so a silence means it stalled)."""
        if self._body is not None or self._skipped is not None:
            return True
        return bool(self.buffer.strip())  # at most a header block's worth of bytes

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while self._step():
            pass

    def _step(self) -> bool:
        """Consume one message (or one piece of junk); False when more input is needed."""
        if self._skipped is not None:
            return self._skip()
        if self._body is not None:
            return self._receive(self._body)
        match = _HEADER.search(self.buffer)
        if match is None:
            start = _HEADER_LINE.search(self.buffer)
            if start is not None and start.start() > 0:  # junk before a header still arriving
                self._junk(start.start())
                return True
            if len(self.buffer) > _MAX_HEADER_BLOCK:  # an unframed blob, or a header never ended
                later = _HEADER_LINE.search(self.buffer, 1)
                self._junk(later.start() if later is not None else len(self.buffer))
                return True
            return False
        if match.start() > 0:
            self._junk(match.start())
            return True
        length = int(match.group(1))
        if length > self.limit:
            del self.buffer[: match.end()]
            self._skipped = _Skipped(length, length)
            return True
        self._body = _Body(match.end(), length, match.end())
        return True

    def _receive(self, body: _Body) -> bool:
        end = body.start + body.length
        available = min(len(self.buffer), end)
        later = _HEADER_LINE.search(self.buffer, body.searched, available)
        if later is not None:  # the declared length runs into the next message
            self._body = None
            self.on_junk(f"Content-Length {body.length} runs into the next message")
            del self.buffer[: later.start()]
            return True
        if available < end:
            body.searched = max(body.start, available - _OVERLAP)
            return False
        data = bytes(self.buffer[body.start : end])
        del self.buffer[:end]
        self._body = None
        self.on_body(data)
        return True

    def _skip(self) -> bool:
        skipped = self._skipped
        assert skipped is not None
        available = min(len(self.buffer), skipped.remaining)
        later = _HEADER_LINE.search(self.buffer, skipped.searched, available)
        if later is not None:
            self._skipped = None
            self.on_junk(f"Content-Length {skipped.length} runs into the next message")
            del self.buffer[: later.start()]
            return True
        if skipped.head is None and (available >= _KEEP or available == skipped.remaining):
            skipped.head = bytes(self.buffer[: min(available, _KEEP)])
        if available == skipped.remaining:
            tail = bytes(self.buffer[max(0, available - _KEEP) : available])
            del self.buffer[:available]
            self._skipped = None
            self.on_oversized(skipped.length, skipped.head or b"", tail)
            return True
        skipped.searched = max(0, available - _OVERLAP)
        if available > 2 * _KEEP:  # keep the last _KEEP bytes: the tail, and the overlap
            drop = available - _KEEP
            del self.buffer[:drop]
            skipped.remaining -= drop
            skipped.searched -= drop
        return False

    def _junk(self, size: int) -> None:
        junk = bytes(self.buffer[:size])
        del self.buffer[:size]
        if junk.strip():
            self.on_junk(f"{len(junk)} bytes outside any Content-Length frame")

    def stalled(self) -> None:
        """No input for a while: an incomplete message will not be completed."""
        if self._skipped is not None:
            self.on_junk(f"an incomplete message of {self._skipped.length} bytes")
        elif self.buffer.strip():
            self.on_junk(f"an incomplete message of {len(self.buffer)} bytes")
        self._body = self._skipped = None
        self.buffer.clear()


# -- the id of a message too large to read ------------------------------------------------
_WS = " \t\r\n"
# the last member of the top-level object: a nested object ends in two braces, and a
# string holding such text would have its quotes escaped
_LAST_ID = re.compile(r',\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*\Z')


def _leading_members(head: str) -> dict[str, Any]:
    """The top-level members of the JSON object that ``head`` begins; ``...`` for the value
    of a member that runs past it."""
    decoder = json.JSONDecoder()
    members: dict[str, Any] = {}
    i = len(head) - len(head.lstrip(_WS))
    if not head.startswith("{", i):
        return members
    i += 1
    while True:
        while i < len(head) and head[i] in _WS:
            i += 1
        try:
            key, i = decoder.raw_decode(head, i)
            while i < len(head) and head[i] in _WS:
                i += 1
            if not isinstance(key, str) or not head.startswith(":", i):
                return members
            i += 1
            while i < len(head) and head[i] in _WS:
                i += 1
            members[key] = ...  # present, its value not (yet) read
            members[key], i = decoder.raw_decode(head, i)
        except ValueError:  # the value runs past the head
            return members
        while i < len(head) and head[i] in _WS:
            i += 1
        if not head.startswith(",", i):
            return members
        i += 1


def oversized_message_id(head: bytes, tail: bytes) -> tuple[bool, Any]:
    """``(is_request, id)`` of a message known only by its first and last bytes.

    Clients write ``jsonrpc``, ``id`` and ``method`` before ``params`` (vscode-jsonrpc,
    pygls, Neovim), so they are in the head; an ``id`` written last is in the tail. A
    message whose id is in neither, or that is a response, is not a request we can
    answer (it is logged and dropped)."""
    members = _leading_members(head.decode("utf-8", "replace"))
    msg_id = members.get("id")  # `...`: not answerable
    if msg_id is None:
        last = _LAST_ID.search(tail.decode("utf-8", "replace"))
        if last is not None:
            msg_id = json.loads(last.group(1))
    answerable = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
    is_response = "result" in members or "error" in members
    return answerable and not is_response, msg_id if answerable else None
