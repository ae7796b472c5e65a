"""Run the language server with three stand-in rules, for deterministic end-to-end tests.

The real rules evolve (messages, spans, which snippets fire); the server's tests are
about the protocol, so they run against rules whose behaviour is fixed here:

- ``TW900 print-call`` (warning): every ``print(...)``; a safe fix renames it to ``log``
  and an unsafe one deletes the argument list's contents;
- ``TW901 breakpoint-call`` (error): every ``breakpoint()``, with the enclosing ``def``
  as evidence; no fix;
- ``TW902 input-call`` (note): every ``input(...)``.

The engine's rule registry and facts builder are replaced in this process only; the
engine still parses, applies suppression comments and severity overrides.
"""

from __future__ import annotations

import ast
import sys

from torchward.analysis import Applicability, Edit, Evidence, Fix, Severity, Span, engine, rule
from torchward.analysis.rule import Rule
from torchward.analysis.syntax.positions import LineIndex


def _calls(facts, name: str):
    index = LineIndex(facts.source)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(facts.tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            owner = parents.get(node)
            while owner is not None and not isinstance(
                owner, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                owner = parents.get(owner)
            yield node, index, owner


class PrintCall(Rule):
    """## What it does
    Flags ``print`` (a stand-in rule for the server's tests).
    """

    code = "TW900"
    name = "print-call"
    default_severity = Severity.WARNING
    summary = "Stand-in rule: print() call."

    def check(self, facts):
        for node, index, _ in _calls(facts, "print"):
            func = index.span(node.func)
            call = index.span(node)
            inner = Span(func.end_line, func.end_column + 1, call.end_line, call.end_column - 1)
            yield self.finding(
                func,
                "print() in training code",
                fixes=[
                    Fix("Replace print with log", Applicability.SAFE, (Edit(func, "log"),)),
                    Fix("Drop the printed values", Applicability.UNSAFE, (Edit(inner, ""),)),
                ],
            )


class BreakpointCall(Rule):
    """## What it does
    Flags ``breakpoint()`` (a stand-in rule for the server's tests).
    """

    code = "TW901"
    name = "breakpoint-call"
    default_severity = Severity.ERROR
    summary = "Stand-in rule: breakpoint() call."

    def check(self, facts):
        for node, index, owner in _calls(facts, "breakpoint"):
            evidence = []
            if owner is not None:
                evidence.append(Evidence(index.head_span(owner), "inside this function"))
            yield self.finding(index.span(node), "breakpoint() left in", evidence=evidence)


class InputCall(Rule):
    """## What it does
    Flags ``input()`` (a stand-in rule for the server's tests).
    """

    code = "TW902"
    name = "input-call"
    default_severity = Severity.NOTE
    summary = "Stand-in rule: input() call."

    def check(self, facts):
        for node, index, _ in _calls(facts, "input"):
            yield self.finding(index.span(node), "input() blocks a training job")


FAKE_RULES = (PrintCall, BreakpointCall, InputCall)


class _Facts:
    """The engine's facts, plus the text and tree the stand-in rules read."""

    def __init__(self, path: str, source: str, tree: ast.Module, facts) -> None:
        self.path, self.source, self.tree, self.facts = path, source, tree, facts

    def __getattr__(self, name: str):
        return getattr(self.facts, name)


def install() -> None:
    original = engine.build_facts

    def build_facts(tree, source, path, cache=None):
        return _Facts(path, source, tree, original(tree, source, path, cache))

    engine.build_facts = build_facts
    # the stand-in rules read one file's own text: findings linked across files are the
    # real rules' business (tests/server/test_crossfile_server.py)
    engine._linked_findings = lambda facts, rules: []
    engine.all_rules = lambda: FAKE_RULES
    rule.all_rules = lambda: FAKE_RULES


if __name__ == "__main__":
    install()
    from torchward.server import main

    sys.exit(main(sys.argv[1:]))
