"""How far the engine's launch facts already answer what the script reader asks.

Issue 12, item 1 folds the estimator's script reader into the analysis engine
(``docs/design/analysis.md``, "The run configuration and the engine"). Steps 1 and 2 put
constants and path conditions into the dataflow (launch mode, :mod:`torchward.analysis.facts.launch`);
the reader switches to them once they answer everything it asks. This bench measures that
on the development scripts: the reader reads each script as it always does, every value
(``Values.get``) and path condition (``PathConditions.state``) it computes is recorded,
and the engine's launch facts for the same nodes of the same tree are compared with them:

- *agree*: the engine has the same value (or condition);
- *silent*: the engine has no decided value where the reader found one (what the next
  steps of the fold add: dataclasses, config files, executed configurators, ...);
- *differ*: both decided, differently — each is listed, because one of them is wrong.

Also the engine's launch-mode cost per script (CPU ms, best of 3, the parsed tree given:
the reader has one), against the 50 ms an estimate may take; functions the flow does not
reach are analysed when the comparison asks about them, which this time leaves out.

    .venv/bin/python bench/fold_agreement.py [--corpus /tmp/dev-corpus] [-v] [--scan]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from torchward.analysis.facts.analyzer import FileAnalyzer  # noqa: E402
from torchward.analysis.facts.constants import UNDECIDED, Items  # noqa: E402
from torchward.analysis.facts.filefacts import build_launch_facts  # noqa: E402
from torchward.analysis.facts.launch_arguments import Namespace  # noqa: E402
from torchward.analysis.facts.launch_driver import LaunchInputs  # noqa: E402
from torchward.analysis.job.launch_demand import DemandLaunch  # noqa: E402
from torchward.analysis.job.runconfig import read_source  # noqa: E402
from torchward.analysis.job.runconfig_declarations import Values  # noqa: E402
from torchward.analysis.job.runconfig_paths import PathConditions  # noqa: E402


def _comparable(value: Any) -> Any:
    """The reader's Python values as the engine spells constants (tuples, item tuples)."""
    if isinstance(value, list | tuple):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, dict):
        return Items((k, _comparable(v)) for k, v in value.items())
    return value


def _same(reader: Any, engine: Any) -> bool:
    if isinstance(engine, Namespace):  # the reader's config object is a dict
        engine = Items(engine.values)
    try:
        reader = _comparable(reader)
        return type(reader) is type(engine) and reader == engine
    except Exception:
        return False


class _Recorder:
    """Wraps the reader's two questions for one read, keeping their answers by node."""

    def __init__(self) -> None:
        self.values: dict[int, tuple[ast.AST, Any]] = {}
        self.states: dict[int, tuple[ast.AST, Any]] = {}
        self._get = Values.get
        self._state = PathConditions.state

    def __enter__(self) -> _Recorder:
        recorder = self

        def get(values: Values, node: ast.AST | None) -> Any:
            found = recorder._get(values, node)
            if node is not None and found is not None:
                recorder.values[id(node)] = (node, found[0])
            return found

        def state(paths: PathConditions, node: ast.AST, depth: int = 0) -> Any:
            found = recorder._state(paths, node, depth)
            statement, in_an_arm = node, False
            while statement is not None and not isinstance(statement, ast.stmt):
                parent = paths.parent(statement)
                # ``a if test else b``: an arm's state is not its statement's
                in_an_arm |= isinstance(parent, ast.IfExp) and statement is not parent.test
                statement = parent
            if statement is not None and depth == 0 and not in_an_arm:
                recorder.states[id(statement)] = (statement, found)
            return found

        Values.get = get  # type: ignore[method-assign]
        PathConditions.state = state  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Values.get = self._get  # type: ignore[method-assign]
        PathConditions.state = self._state  # type: ignore[method-assign]


def _demand_engine(tree: ast.Module, source: str, path: str) -> DemandLaunch:
    return DemandLaunch(FileAnalyzer(tree, source, path, launch=LaunchInputs()))


def _ask_all(engine: Any, recorded: _Recorder) -> None:
    for node, _ in recorded.values.values():
        engine.constant(node)
    for statement, _ in recorded.states.values():
        engine.condition(statement)


def compare(path: str, verbose: bool, demand: bool = False) -> dict[str, Any]:
    with open(path, encoding="utf-8-sig") as handle:
        source = handle.read()
    tree = ast.parse(source)
    with _Recorder() as recorded:
        read_source(source, path, tree=tree)
    if demand:
        launch: Any = _demand_engine(tree, source, path)
    else:
        launch = build_launch_facts(tree, source, path).analyzer.launch
    assert launch is not None
    counts = {"agree": 0, "silent": 0, "differ": 0}
    conditions = {"agree": 0, "silent": 0, "differ": 0}
    differences: list[str] = []
    for node, value in recorded.values.values():
        fact = launch.constant(node)
        if fact is None or fact.value is UNDECIDED:
            counts["silent"] += 1
        elif _same(value, fact.value):
            counts["agree"] += 1
        else:
            counts["differ"] += 1
            differences.append(
                f"  value  line {getattr(node, 'lineno', '?')}: reader {value!r:.60} "
                f"engine {fact.value!r:.60} ({fact.condition.value})"
            )
    for statement, state in recorded.states.values():
        condition = launch.condition(statement)
        if condition is None:
            conditions["silent"] += 1
        elif condition is state:
            conditions["agree"] += 1
        else:
            conditions["differ"] += 1
            differences.append(
                f"  state  line {statement.lineno}: reader {state.value} engine {condition.value}"
            )
    best = []
    for _ in range(3):  # the tree the reader already parsed: the engine only reads it
        start = time.process_time()
        if demand:  # every question the reader asked, answered afresh
            _ask_all(_demand_engine(tree, source, path), recorded)
        else:
            build_launch_facts(tree, source, path)
        best.append((time.process_time() - start) * 1000)
    if verbose:
        for line in differences:
            print(line)
    return {"values": counts, "conditions": conditions, "ms": min(best)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="/tmp/dev-corpus")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every difference")
    parser.add_argument(
        "--scan",
        action="store_true",
        help="also the corpus's training scripts outside the development set (bench/reader_scan.py)",
    )
    parser.add_argument(
        "--demand",
        action="store_true",
        help="ask the engine's launch on demand (analysis/job/launch_demand.py), not its forward pass",
    )
    args = parser.parse_args(argv)
    with open(os.path.join(HERE, "estimator_scripts.json"), encoding="utf-8") as handle:
        scripts = json.load(handle)
    scripts = scripts.get("scripts", scripts) if isinstance(scripts, dict) else scripts
    if args.scan:
        from reader_scan import training_scripts

        scripts = scripts + [{"path": path} for path in training_scripts(args.corpus)]
    totals = {"values": dict.fromkeys(("agree", "silent", "differ"), 0)}
    totals["conditions"] = dict(totals["values"])
    times = []
    print(f"{'values a/s/d':>14} {'conditions a/s/d':>17} {'engine ms':>10}  script")
    for expected in scripts:
        path = os.path.join(args.corpus, expected["path"])
        if args.verbose:
            print(expected["path"])
        result = compare(path, args.verbose, args.demand)
        for part in ("values", "conditions"):
            for key, count in result[part].items():
                totals[part][key] += count
        times.append(result["ms"])
        v, c = result["values"], result["conditions"]
        print(
            f"{v['agree']:>5}/{v['silent']:>3}/{v['differ']:>3}"
            f" {c['agree']:>8}/{c['silent']:>3}/{c['differ']:>3}"
            f" {result['ms']:>10.1f}  {expected['path']}"
        )
    for part, counts in totals.items():
        asked = sum(counts.values()) or 1
        print(
            f"{part}: {counts['agree']} agree ({100 * counts['agree'] / asked:.0f}%), "
            f"{counts['silent']} the engine cannot answer yet, {counts['differ']} differ"
        )
    print(f"launch-mode engine: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
