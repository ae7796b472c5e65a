"""Fix edits for the editor, built on demand and off the event loop.

Findings leave the analysis without fixes: building one needs a LibCST tree (5-15x the
cost of ``ast``, ARCHITECTURE.md), which linting never pays for. The server asks
:mod:`torchward.analysis.fixes` only when the user asks for actions on a flagged range
(one finding, the tree cached by content) or resolves "fix all" (every safe fix,
repeated until stable — the CLI's ``--fix``). Both run on the analysis executor, so a
first LibCST parse (about 0.5 s with the import) never stalls the message loop, and both
are answered only for the document version they were computed from.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchward.analysis import Edit, Finding, Fix

    from .documents import Document
    from .server import TorchwardServer


def is_fixable(code: str) -> bool:
    from torchward.analysis.fixes import is_fixable as has_fixer

    try:
        return has_fixer(code)
    except Exception:  # a broken fixer package must not take code actions down
        return False


def _fixes(text: str, finding: Finding) -> tuple[Fix, ...]:
    if finding.fixes:
        return finding.fixes
    if not is_fixable(finding.code):
        return ()
    from torchward.analysis.fixes import fixes_for

    return fixes_for(text, finding)


async def fixes_of(
    server: TorchwardServer, document: Document, finding: Finding
) -> tuple[Fix, ...]:
    """The fixes of ``finding`` in the document's current text (built on a worker)."""
    if finding.fixes:
        return finding.fixes
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(server.executor, _fixes, document.text, finding)


def _fix_all(text: str, path: str, settings) -> tuple[Edit, ...]:
    from torchward.analysis.fixes import edits_between, fix_source

    outcome = fix_source(text, path, settings)
    return edits_between(text, outcome.text) if outcome.text != text else ()


async def fix_all_edits(server: TorchwardServer, document: Document) -> tuple[Edit, ...]:
    """Every safe fix of the document, applied until stable, as edits of its current text."""
    settings, _ = server.folders.lint_settings(document.path, server.settings_for(document.path))
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        server.executor, _fix_all, document.text, document.path, settings
    )
