"""How much a demand-driven launch could save: the engine's launch with statements skipped.

Issue 12, item 1 (the run configuration read from the engine's facts) is built on the
branch ``fold-switch`` and costs about 1.7x main's reader. This bench measures, on a
checkout of that branch, what skipping the simple statements the reader asks nothing of
would save — an upper bound before building any slicer (``docs/design/analysis.md``,
session 7). For each development script, best of 3 (CPU ms, the parsed tree given):

- ``full``: the branch's read as it is;
- ``oracle-loops``: simple statements inside loops skipped unless the reader asked the
  launch about a node in them (the questions of a first, full read);
- ``oracle-all``: every simple statement skipped unless asked about (unsound: what the
  answers depend on is skipped too);
- ``syntactic``: a slice a syntactic rule allows — no call other than to an
  imported module or a builtin, no name stored that a kept statement or a test loads.

Skipped statements still have their path condition noted. Each mode's fields are compared
with the full read's ("differ": scripts whose run configuration changed).

    .venv/bin/python bench/launch_slicing.py /tmp/fs [--corpus /tmp/dev-corpus]

where ``/tmp/fs`` is a checkout of ``fold-switch`` (``git worktree add /tmp/fs fold-switch``).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_SIMPLE = (ast.Assign, ast.AugAssign, ast.Expr, ast.AnnAssign)
_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)
_BUILTINS = frozenset(dir(builtins))
sys.path.insert(0, HERE)

from checkout_import import import_checkout  # noqa: E402


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _names(node: ast.AST, context: type) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, context)}


def syntactic_slice(tree: ast.Module) -> set[int]:
    """Ids of simple statements whose skipping cannot change what the launch answers about
    the others: no call except to an imported name or a builtin, no conditional
    expression, and no name stored (or mutated through an attribute, item or method) that
    a kept statement, a test or a ``return`` loads — to a fixpoint."""
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    safe_roots = imported | _BUILTINS
    candidates: dict[int, tuple[set[str], set[str]]] = {}
    needed: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, _COMPOUND):
            for part in ("test", "iter"):
                if isinstance(getattr(node, part, None), ast.AST):
                    needed |= _names(getattr(node, part), ast.Load)
            for item in getattr(node, "items", ()):
                needed |= _names(item.context_expr, ast.Load)
        if isinstance(node, ast.Return) and node.value is not None:
            needed |= _names(node.value, ast.Load)
        if not isinstance(node, _SIMPLE):
            continue
        loads, stores = _names(node, ast.Load), _names(node, ast.Store)
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        stores |= {r for t in targets if t is not None and (r := _root_name(t))}
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            if isinstance(node.value.func, ast.Attribute):
                stores |= {r for r in [_root_name(node.value.func.value)] if r}
        pure = all(
            _root_name(n.func) in safe_roots for n in ast.walk(node) if isinstance(n, ast.Call)
        ) and not any(isinstance(n, (ast.IfExp, ast.NamedExpr, ast.Lambda)) for n in ast.walk(node))
        if pure:
            candidates[id(node)] = (loads, stores)
        else:
            needed |= loads
    changed = True
    while changed:
        changed = False
        for key, (loads, stores) in list(candidates.items()):
            if stores & needed:
                del candidates[key]
                needed |= loads
                changed = True
    return set(candidates)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", help="a checkout of the fold-switch branch")
    parser.add_argument("--corpus", default="/tmp/dev-corpus")
    args = parser.parse_args(argv)
    import_checkout(os.path.abspath(args.checkout))
    from torchward.analysis.facts import interpreter, launch_paths
    from torchward.analysis.job.runconfig import read_source

    asked: set[int] = set()  # lines of nodes the reader asked the launch about
    original_constant = launch_paths.LaunchFacts.constant

    def constant(self, node):
        asked.add(getattr(node, "lineno", 0))
        return original_constant(self, node)

    launch_paths.LaunchFacts.constant = constant
    skip: dict[str, object] = {"predicate": None}

    original_execute = interpreter.FunctionRun.execute

    def execute(self, body):
        """The engine's own ``execute`` over the runs of statements kept; a skipped one only
        has its path condition noted (when it is reached: a block ends at a return)."""
        launch, predicate = self.analyzer.launch, skip["predicate"]
        if launch is None or predicate is None:
            return original_execute(self, body)
        kept: list[ast.stmt] = []
        for statement in [*body, None]:
            if statement is not None and not predicate(self, statement):
                kept.append(statement)
                continue
            if kept:
                original_execute(self, kept)
                if isinstance(kept[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                    return None
                kept = []
            if statement is not None:
                launch.note_condition(statement, self.condition)
        return None

    interpreter.FunctionRun.execute = execute

    def best(source: str, path: str, tree: ast.Module) -> tuple[float, str]:
        times, result = [], ""
        for _ in range(3):
            start = time.process_time()
            config, _notes = read_source(source, path, tree=tree)
            times.append((time.process_time() - start) * 1000)
            result = repr(config)
        return min(times), result

    with open(os.path.join(HERE, "estimator_scripts.json"), encoding="utf-8") as handle:
        scripts = [os.path.join(args.corpus, s["path"]) for s in json.load(handle)["scripts"]]
    modes = ("full", "oracle-loops", "oracle-all", "syntactic")
    totals = dict.fromkeys(modes, 0.0)
    differ = dict.fromkeys(modes, 0)
    print("  ".join(f"{m:>12}" for m in modes) + "  script (CPU ms, best of 3)")
    for path in scripts:
        with open(path, encoding="utf-8-sig") as handle:
            source = handle.read()
        tree = ast.parse(source)
        skip["predicate"] = None
        asked.clear()
        full_ms, full = best(source, path, tree)
        oracle = set(asked)

        def unasked(statement: ast.stmt) -> bool:
            end = statement.end_lineno or statement.lineno
            return isinstance(statement, _SIMPLE) and not any(
                statement.lineno <= line <= end for line in oracle
            )

        sliced = syntactic_slice(tree)
        predicates = {
            "oracle-loops": lambda run, s: bool(run.loops) and unasked(s),
            "oracle-all": lambda run, s: unasked(s),
            "syntactic": lambda run, s: id(s) in sliced,
        }
        row = {"full": full_ms}
        totals["full"] += full_ms
        for mode, predicate in predicates.items():
            skip["predicate"] = predicate
            row[mode], result = best(source, path, tree)
            totals[mode] += row[mode]
            differ[mode] += result != full
        skip["predicate"] = None
        print(
            "  ".join(f"{row[m]:>12.1f}" for m in modes) + f"  {os.path.relpath(path, args.corpus)}"
        )
    print("  ".join(f"{totals[m]:>12.0f}" for m in modes) + "  total")
    print("  ".join(f"{differ[m]:>12}" for m in modes) + "  scripts whose fields differ from full")
    return 0


if __name__ == "__main__":
    sys.exit(main())
