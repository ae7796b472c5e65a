"""CPU cost of issue 28's rules (TW025, TW026, TW027) on top of one analysis.

The three rules are cheap by construction. TW025 reads the scaler events the dataflow
already records. TW026 and TW027 walk the syntax tree only when the file's text names
`pack_padded_sequence` / `pack_sequence` or `get_peft_model_state_dict`. This script
checks that claim. It measures CPU time (``time.process_time``) of ``analyze_source``
over every ``.py`` file of a tree, with every other rule and with every rule, each
round in the same process. It reports the best of ``--repeat`` rounds and the ratio.

Run: ``.venv/bin/python bench/bench_issue28_rules.py /tmp/dev-corpus``
"""

from __future__ import annotations

import argparse
import os
import time

from torchward.analysis import LintSettings, all_rules, analyze_source

NEW = {"TW025", "TW026", "TW027"}


def _sources(root: str) -> list[tuple[str, str]]:
    found = []
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as handle:
                    found.append((path, handle.read()))
    return found


def _cpu(sources, settings: LintSettings) -> float:
    start = time.process_time()
    for path, text in sources:
        analyze_source(text, path, settings)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    sources = _sources(args.tree)
    others = tuple(r.code for r in all_rules() if r.code not in NEW)
    every = tuple(r.code for r in all_rules())
    _cpu(sources[:50], LintSettings(select=every))  # warm imports and caches
    without = min(_cpu(sources, LintSettings(select=others)) for _ in range(args.repeat))
    with_new = min(_cpu(sources, LintSettings(select=every)) for _ in range(args.repeat))
    print(f"{len(sources)} files")
    print(f"without TW025-TW027: {without:.2f} s CPU")
    print(f"with them:           {with_new:.2f} s CPU  (x{with_new / without:.3f})")


if __name__ == "__main__":
    main()
