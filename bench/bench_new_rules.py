"""CPU cost of the second catalog's rules (TW004, TW007, TW008, TW013, TW015-TW024), in process.

Why this exists: issue 14 requires "no loss of speed: the PyTorch-tree cold check within
1.3x of today's time". Wall-clock runs of ``torchward check`` on the shared 2-core
machine vary by tens of percent with the load, so this measures CPU time
(``time.process_time``) of ``analyze_source`` over every ``.py`` file of a tree, three
ways, each the best of ``--repeat`` rounds:

* ``seed``: only the rules that existed before issue 14;
* ``all``: every rule;
* the ratio all / seed, which is what the new rules add on top of one analysis.

The observation hooks of :mod:`torchward.analysis.facts.observed` run in both (they are part
of the dataflow), so their cost is in both figures; the ratio isolates the rules.

Run: ``.venv/bin/python bench/bench_new_rules.py /path/to/torch`` (a tree of ``.py``
files, e.g. the ``torch`` folder of the torch 2.13.0 wheel unpacked with
``python -m zipfile -e``).
"""

from __future__ import annotations

import argparse
import os
import time

from torchward.analysis import LintSettings, all_rules, analyze_source

NEW = {
    "TW004",
    "TW007",
    "TW008",
    "TW013",
    "TW015",
    "TW016",
    "TW017",
    "TW018",
    "TW019",
    "TW020",
    "TW021",
    "TW022",
    "TW023",
    "TW024",
}


def sources(root: str) -> list[tuple[str, str]]:
    found = []
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8", errors="replace") as handle:
                    found.append((path, handle.read()))
    return sorted(found)


def cpu_seconds(files: list[tuple[str, str]], settings: LintSettings) -> tuple[float, int]:
    start = time.process_time()
    count = 0
    for path, text in files:
        count += len(analyze_source(text, path, settings).findings)
    return time.process_time() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    files = sources(args.root)
    codes = [rule.code for rule in all_rules()]
    seed = LintSettings(select=tuple(c for c in codes if c not in NEW))
    every = LintSettings(select=tuple(codes))
    best: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeat):
        for label, settings in (("seed", seed), ("all", every)):
            seconds, count = cpu_seconds(files, settings)
            if label not in best or seconds < best[label][0]:
                best[label] = (seconds, count)
    print(f"{len(files)} files under {args.root}")
    for label, (seconds, count) in best.items():
        print(f"{label:>5}: {seconds:7.2f} s CPU, {count} findings")
    print(f"ratio all/seed: {best['all'][0] / best['seed'][0]:.3f}")


if __name__ == "__main__":
    main()
