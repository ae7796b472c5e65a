"""Time to get large messages through the server's framing: linear in their size (issue 29).

Two measurements, for messages of 1, 4 and 16 MB (sizes with ``--sizes``):

- **framer**: :class:`torchward.server.framing.Framer` alone, fed one notification in
  the 64 KiB reads the stdio loop makes, best of ``--runs``;
- **server**: the real ``python -m torchward.server`` over stdio: an initialised server
  is sent one notification it ignores (``$/torchward/ignored``, whose params are a
  string of that size) followed by a hover request; the time from the first byte written
  to the hover's reply (framing, ``json.loads`` and dispatch of the large message).

``--baseline REV`` also times the framer of ``server/transport.py`` at git revision REV
(the quadratic one before issue 29, e.g. ``55cff53``), loaded from ``git show``.

    .venv/bin/python bench/bench_framing.py [--sizes 1,4,16] [--runs 3] [--baseline 55cff53]

Target: a 16 MB message in under 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "server"))

from test_jsonrpc_errors import HOVER, START_S, Connection, frame, request  # noqa: E402

READ = 1 << 16  # what the stdio loop reads at a time


def notification(size: int) -> bytes:
    """A framed notification whose body is about ``size`` bytes."""
    body = json.dumps({"jsonrpc": "2.0", "method": "$/torchward/ignored", "params": ["x" * size]})
    return frame(body)


def time_framer(make, data: bytes, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        bodies: list[bytes] = []
        framer = make(bodies.append)
        started = time.perf_counter()
        for offset in range(0, len(data), READ):
            framer.feed(data[offset : offset + READ])
        best = min(best, time.perf_counter() - started)
        assert len(bodies) == 1, "the message did not come through whole"
    return best


def current_framer(on_body):
    from torchward.server.framing import Framer

    def refuse(*args) -> None:
        raise AssertionError(f"not one clean message: {args}")

    return Framer(on_body, refuse, refuse, limit=1 << 30)


def baseline_framer(revision: str):
    source = subprocess.run(
        ["git", "show", f"{revision}:server/transport.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("baseline_transport")
    module.__dict__["__name__"] = "torchward.server.baseline_transport"
    module.__dict__["__package__"] = "torchward.server"
    exec(compile(source, f"{revision}:server/transport.py", "exec"), module.__dict__)

    def make(on_body):
        return module.Framer(on_body, lambda reason: None)

    return make


def time_server(data: bytes) -> float:
    connection = Connection()
    try:
        connection.send(
            frame(
                request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
            )
        )
        assert connection.reply(START_S)["id"] == 1
        connection.send(frame(json.dumps({"jsonrpc": "2.0", "method": "initialized"})))
        time.sleep(1.0)  # let the engine warm up: not part of what is timed
        started = time.perf_counter()
        connection.send(data + frame(request(2, "textDocument/hover", HOVER)))
        reply = connection.reply(300.0)
        elapsed = time.perf_counter() - started
        assert reply == {"jsonrpc": "2.0", "id": 2, "result": None}, reply
        return elapsed
    finally:
        connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,4,16", help="message sizes in MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV", help="also time this revision's framer")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"{'MB':>4} {'framer s':>9} {'server s':>9}"
        + (f" {'baseline s':>11}" if args.baseline else "")
    )
    for mb in sizes:
        data = notification(mb * 1_000_000)
        row = f"{mb:>4} {time_framer(current_framer, data, args.runs):>9.3f} {time_server(data):>9.3f}"
        if args.baseline:
            row += f" {time_framer(baseline_framer(args.baseline), data, 1):>11.3f}"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
