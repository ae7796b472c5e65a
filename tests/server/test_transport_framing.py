"""The framer alone: every cut of the stream gives the same messages, broken frames are
reported once, and an oversized body is dropped as it arrives with its id still found."""

from __future__ import annotations

import json

import pytest
from torchward.server.framing import Framer, oversized_message_id


def frame(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


class Recorder:
    def __init__(self, limit: int = 1 << 30) -> None:
        self.bodies: list[bytes] = []
        self.junk: list[str] = []
        self.oversized: list[tuple[int, bytes, bytes]] = []
        self.framer = Framer(self.bodies.append, self.junk.append, self._oversized, limit)

    def _oversized(self, length: int, head: bytes, tail: bytes) -> None:
        self.oversized.append((length, head, tail))

    def feed_in_pieces(self, data: bytes, size: int) -> None:
        for offset in range(0, len(data), size):
            self.framer.feed(data[offset : offset + size])


ONE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "a", "params": {"t": "x\r\ny"}}).encode()
TWO = json.dumps({"jsonrpc": "2.0", "method": "b", "params": ["Content-Length: 5"]}).encode()


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 19, 64, 1000])
def test_every_cut_of_the_stream_gives_the_same_messages(piece):
    recorder = Recorder()
    recorder.feed_in_pieces(frame(ONE) + frame(TWO) + frame(ONE), piece)
    assert recorder.bodies == [ONE, TWO, ONE]
    assert recorder.junk == [] and not recorder.framer.waiting


@pytest.mark.parametrize("piece", [1, 5, 33, 4096])
def test_a_length_that_runs_into_the_next_header_is_reported_and_the_next_message_read(piece):
    recorder = Recorder()
    recorder.feed_in_pieces(frame(ONE, len(ONE) + 500) + frame(TWO), piece)
    assert recorder.junk == [f"Content-Length {len(ONE) + 500} runs into the next message"]
    assert recorder.bodies == [TWO]
    recorder.framer.feed(frame(ONE))
    assert recorder.bodies == [TWO, ONE]


def test_a_header_line_straddling_two_reads_inside_a_body_is_found():
    recorder = Recorder()
    data = frame(ONE, 10_000) + frame(TWO)
    cut = data.index(b"Content-Length", 10) + 9  # inside the second header line
    recorder.framer.feed(data[:cut])
    recorder.framer.feed(data[cut:])
    assert len(recorder.junk) == 1 and recorder.bodies == [TWO]


def test_junk_before_a_header_and_an_unframed_blob_are_reported():
    recorder = Recorder()
    recorder.framer.feed(b"hello\r\n" + frame(ONE))
    assert recorder.junk == ["7 bytes outside any Content-Length frame"]
    assert recorder.bodies == [ONE]
    recorder.feed_in_pieces(b"x" * 200_000, 4096)  # never framed: not held forever
    assert len(recorder.framer.buffer) < 70_000 and len(recorder.junk) >= 2


def test_a_header_that_never_ends_is_dropped_not_held():
    recorder = Recorder()
    recorder.feed_in_pieces(b"Content-Length: 5\r\n" + b"y" * 200_000, 4096)
    assert len(recorder.framer.buffer) < 70_000 and recorder.junk
    recorder.framer.stalled()
    recorder.framer.feed(frame(TWO))
    assert recorder.bodies == [TWO]


def test_a_stalled_body_is_reported_and_forgotten():
    recorder = Recorder()
    recorder.framer.feed(frame(ONE)[:-3])
    assert recorder.framer.waiting
    recorder.framer.stalled()
    assert recorder.junk == [f"an incomplete message of {len(frame(ONE)) - 3} bytes"]
    assert not recorder.framer.waiting
    recorder.framer.feed(frame(TWO))
    assert recorder.bodies == [TWO]


def big_request(size: int, msg_id: object = 7, id_last: bool = False) -> bytes:
    params = {"textDocument": {"uri": "file:///a.py", "text": "z" * size, "id": 99}}
    if id_last:
        message = {"jsonrpc": "2.0", "method": "m", "params": params, "id": msg_id}
    else:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": "m", "params": params}
    return json.dumps(message).encode()


@pytest.mark.parametrize("piece", [4096, 65536, 1 << 20])
def test_an_oversized_body_is_dropped_as_it_arrives_and_the_stream_goes_on(piece):
    recorder = Recorder(limit=100_000)
    body = big_request(1_000_000)
    peak = 0
    data = frame(body) + frame(TWO)
    for offset in range(0, len(data), piece):
        recorder.framer.feed(data[offset : offset + piece])
        peak = max(peak, len(recorder.framer.buffer))
    assert peak <= 2 * 65536 + len(frame(TWO))  # never the whole body, whatever the reads
    ((length, head, tail),) = recorder.oversized
    assert length == len(body) and body.startswith(head) and body.endswith(tail)
    assert recorder.bodies == [TWO] and recorder.junk == []


def test_an_oversized_body_with_a_wrong_length_is_a_broken_frame():
    recorder = Recorder(limit=1000)
    recorder.feed_in_pieces(frame(big_request(5000), 900_000) + frame(TWO), 512)
    assert recorder.oversized == [] and recorder.bodies == [TWO]
    assert recorder.junk == ["Content-Length 900000 runs into the next message"]


def test_the_id_of_an_oversized_message_is_read_from_its_head_or_its_tail():
    first = big_request(200_000, msg_id=7)
    assert oversized_message_id(first[:65536], first[-65536:]) == (True, 7)
    last = big_request(200_000, msg_id="abc", id_last=True)
    assert oversized_message_id(last[:65536], last[-65536:]) == (True, "abc")
    # the nested "id": 99 is not the message's: a notification has none
    note = json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"x": "z" * 200_000, "id": 99}})
    data = note.encode()
    assert oversized_message_id(data[:65536], data[-65536:]) == (False, None)
    response = json.dumps({"jsonrpc": "2.0", "id": 4, "result": ["z" * 200_000]}).encode()
    assert oversized_message_id(response[:65536], response[-65536:]) == (False, 4)
