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
    # the project's additions to the library-effects table ([tool.torchward.effects]):
    # torchward.analysis.effects.table.LibraryEffects, None for the built-in table alone
    effects: Any = None
    # Notes are advice and never gate a build: a file shows at most this many (the first by
    # line), so tuning hints do not bury its warnings. None shows every note; selecting a
    # code (`--select TW015`) shows that rule's note even where another came first.
    notes_per_file: int | None = 1

    def is_enabled(self, code: str) -> bool:
        return matches_code(code, self.select) and not matches_code(code, self.ignore)

    def severity_for(self, code: str, default: Severity) -> Severity:
        return dict(self.severity).get(code, default)
