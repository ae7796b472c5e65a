"""Hover: the rule's own documentation over a flagged range.

Protocol model: the client sends a position; the server answers with Markdown for what
lies under it. Over a finding's range the answer is the finding's message followed by
its rule's documentation — the same text as ``torchward explain`` and docs/rules,
generated from the rule class. The memory-breakdown hover (model construction, batch
settings, training loop) joins here once the estimator exists; until then there is
no hover outside findings rather than an invented number.
"""

from __future__ import annotations

from lsprotocol import types

from torchward.analysis import Finding, rule_by_code

from .diagnostics import to_range, to_span
from .server import TorchwardServer


def rule_markdown(code: str) -> str | None:
    rule = rule_by_code(code)
    return rule.documentation() if rule is not None else None


def _contains(finding: Finding, line: int, column: int) -> bool:
    span = finding.span
    return (span.line, span.column) <= (line, column) <= (span.end_line, span.end_column)


def hover(server: TorchwardServer, params: types.HoverParams) -> types.Hover | None:
    document = server.documents.get(params.text_document.uri)
    state = server.states.get(params.text_document.uri)
    if document is None or state is None or state.result is None:
        return None
    position = to_span(document, types.Range(params.position, params.position), server.codec)
    hits = [f for f in state.result.findings if _contains(f, position.line, position.column)]
    if not hits:
        return None
    parts = []
    for code in dict.fromkeys(f.code for f in hits):
        messages = "\n".join(f"- {f.message}" for f in hits if f.code == code)
        documentation = rule_markdown(code) or f"# {code}\n"
        parts.append(f"**{code}** (torchward)\n\n{messages}\n\n---\n\n{documentation}")
    first = hits[0]
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n".join(parts)),
        range=to_range(document, first.span, server.codec),
    )


def register(server: TorchwardServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(lambda params: hover(server, params))
