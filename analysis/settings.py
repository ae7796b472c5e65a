"""The settings the analysis itself needs, as plain values.

Where they come from (``[tool.torchward]``, CLI flags, LSP settings) is the callers'
business; they all end up here.
"""

from __future__ import annotations

from typing import Any

import attrs

from .finding import Severity


def matches_code(code: str, selectors: tuple[str, ...]) -> bool:
    """True when ``code`` is named by one of ``selectors`` (full codes or prefixes; ``ALL``)."""
    return any(s == "ALL" or code.startswith(s) for s in selectors)


@attrs.frozen
class LintSettings:
    select: tuple[str, ...] = ("TW",)
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()  # code -> severity override
    target_gpu: str | None = None  # GPU or instance name for TW010 (projected-oom); None: off
    estimator: Any = None  # torchward.estimator.settings.EstimatorSettings: overrides, user models

    def is_enabled(self, code: str) -> bool:
        return matches_code(code, self.select) and not matches_code(code, self.ignore)

    def severity_for(self, code: str, default: Severity) -> Severity:
        return dict(self.severity).get(code, default)
