"""10,000 random edits through the real server: zero drift, zero ranges outside the document.

Issue 10's target for text synchronisation. Drives ``torchward lsp`` over stdio with the
client model of tests/server/test_text_sync.py (written independently of the server's
code): random incremental edits with form feeds, U+2028/U+2029, ``\\x1c``-``\\x1e``,
``\\x85``, lone ``\\r``, ``\\r\\n``, surrogate pairs and combining marks, spread over four
clients — UTF-16 pull, UTF-16 push, UTF-8 pull, UTF-32 push. After every didChange the
server's text (``torchward/documentState``) is compared with the client's; every 20
notifications the diagnostics are fetched (pulled or awaited as pushed) and each range
checked against the client's document.

    .venv/bin/python bench/bench_text_sync.py [--edits 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import random
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "server"))

from harness import REAL_SERVER, session  # noqa: E402
from test_text_sync import CLIENTS, PIECES, run_edits  # noqa: E402


def script(rng: random.Random, notifications: int) -> list:
    return [
        [
            (
                rng.random(),
                rng.random(),
                "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3))),
            )
            for _ in range(rng.randint(1, 3))
        ]
        for _ in range(notifications)
    ]


async def main(total: int, seed: int) -> int:
    rng = random.Random(seed)
    per_client = total // len(CLIENTS)
    failures = 0
    for label, (name, encodings) in sorted(CLIENTS.items()):
        started, sent = time.perf_counter(), 0
        async with session(name, server=REAL_SERVER, position_encodings=encodings) as editor:
            encoding = encodings[0] if encodings else "utf-16"
            while sent < per_client:
                chunk = script(rng, 20)
                sent += sum(len(changes) for changes in chunk)
                try:
                    await run_edits(editor, encoding, chunk)
                except AssertionError as error:
                    failures += 1
                    print(f"{label}: {error}")
        print(f"{label}: {sent} edits, {time.perf_counter() - started:.1f} s", flush=True)
    print(f"sequences that drifted or had a range outside the document: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.edits, args.seed)))
