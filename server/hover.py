"""Hover: the memory breakdown on the lines that drive the estimate, then one line per
rule flagged under the cursor.

Protocol model: the client sends a position; the server answers with Markdown for what
lies under it. On the line that builds the model, sets the batch size or sequence
length, or opens the training loop, the answer leads with the memory breakdown of the
last estimate against the selected GPU, with the estimator's top remedies when it does
not fit (:mod:`.memory`) — or, for a training script whose job cannot be sized, why and
what to do. No estimate, no breakdown: never an invented number.

Over a finding's range each rule gets one line — its code, name and summary, and a link
to its documentation (the published page when the project has one, else the
``torchward.explain`` command, which shows it inside the editor). The finding's message
is *not* repeated: editors already show the diagnostic itself in the same hover.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .diagnostics import docs_url, to_range, to_span
from .server import TorchwardServer

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import Finding

    from .estimates import GpuEstimate


EXPLAIN_COMMAND = "torchward.explain"


def rule_markdown(code: str) -> str | None:
    from torchward.analysis import rule_by_code

    rule = rule_by_code(code)
    return rule.documentation() if rule is not None else None


def follows_command_links(client_name: str) -> bool:
    """VS Code (and its forks) run ``command:`` links in hovers; other clients cannot."""
    return "code" in client_name.lower()


def explain_link(code: str, client_name: str = "Visual Studio Code") -> str:
    """Where "Explain" goes: the published page, else the command that shows it in the
    editor (VS Code), else the rule's Markdown file, which any client can open (eglot,
    Neovim, Helix cannot follow a ``command:`` link)."""
    url = docs_url(code)
    if url:
        return url
    if not follows_command_links(client_name):
        markdown = rule_markdown(code)
        if markdown is not None:
            from .commands import rule_file

            try:
                return rule_file(code, markdown).as_uri()
            except OSError:
                pass
    return f"command:{EXPLAIN_COMMAND}?{urllib.parse.quote(json.dumps([code]))}"


def rule_line(code: str, client_name: str = "Visual Studio Code") -> str:
    """One line for a rule in a hover: ``**TW001** retained-graph — summary · [Explain TW001](…)``."""
    from torchward.analysis import rule_by_code

    rule = rule_by_code(code)
    about = f" {rule.name} — {rule.summary}" if rule is not None else ""
    return f"**{code}**{about} · [Explain {code}]({explain_link(code, client_name)})"


def _contains(finding: Finding, line: int, column: int) -> bool:
    span = finding.span
    return (span.line, span.column) <= (line, column) <= (span.end_line, span.end_column)


def _finding_parts(hits: list[Finding], client_name: str) -> list[str]:
    codes = dict.fromkeys(f.code for f in hits)
    return ["\n\n".join(rule_line(code, client_name) for code in codes)] if codes else []


def _report(estimate: GpuEstimate) -> dict[str, Any] | None:
    """The estimator's full report (remedies, assumed inputs); runs on a worker."""
    if estimate.detail is None:
        return None
    try:
        from torchward.estimator.report import estimate_report

        from .estimates import across_the_machine

        report = estimate_report(estimate.detail, search=estimate.verdict not in (None, "fits"))
    except Exception:  # the breakdown without remedies is still worth showing
        return None
    machine = across_the_machine(estimate)  # the instance's other GPUs come first
    if machine is not None:
        report = {**report, "remedies": [machine, *(report.get("remedies") or [])]}
    return report


async def _breakdown(server: TorchwardServer, uri: str, line: int) -> str | None:
    """The memory breakdown when 1-based ``line`` is one the estimate was read from."""
    from .lenses import step_line
    from .memory import breakdown_markdown, no_job_markdown

    estimate = server.last_fit.get(uri)
    document = server.documents.get(uri)
    if estimate is None or document is None or estimate.status not in ("ok", "no-job"):
        return None
    anchors = {estimate.line_of(name) for name in ("model", "batch_size", "seq_len")} | {
        step_line(estimate, document)
    }
    if line not in anchors:
        return None
    if estimate.status == "no-job":
        return no_job_markdown(estimate)
    report = await asyncio.get_running_loop().run_in_executor(server.executor, _report, estimate)
    return breakdown_markdown(estimate, report)


async def hover(server: TorchwardServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    document = server.documents.get(uri)
    state = server.states.get(uri)
    if document is None:
        return None
    position = to_span(document, types.Range(params.position, params.position), server.codec)
    findings = state.result.findings if state is not None and state.result is not None else ()
    hits = [f for f in findings if _contains(f, position.line, position.column)]
    breakdown = await _breakdown(server, uri, position.line)
    from .plan import hover_markdown  # torchward.plan's table, once the document was planned

    plans = hover_markdown(server, uri, position.line)
    parts = [p for p in (breakdown, plans) if p is not None] + _finding_parts(
        hits, server.client_name
    )
    if not parts or server.documents.get(uri) is not document:
        return None
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)
        ),
        range=to_range(document, hits[0].span, server.codec) if hits else None,
    )


def register(server: TorchwardServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(params: types.HoverParams) -> types.Hover | None:
        if (located := server.notebooks.owner(params.text_document.uri)) is not None:
            from . import notebooks

            return await notebooks.hover(server, params, *located, hover)
        return await hover(server, params)
