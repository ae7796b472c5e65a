"""Which rules run on which file, at which severity: configuration and flags merged.

The merge policy, in one place: ``--select`` replaces the configured ``select``,
``--ignore`` adds to the configured ``ignore``; ``per-file-ignores`` adds codes for the
files its gitignore-style globs match (relative to the configuration's folder);
``severity`` overrides apply everywhere. The result per file is the analysis'
own :class:`~torchward.analysis.LintSettings`, and :meth:`RuleSelection.identity` is the
part of the cache key that these settings contribute.
"""

from __future__ import annotations

import os

from .analysis import LintSettings, Severity
from .config import Config
from .patterns import PatternList


class RuleSelection:
    def __init__(
        self,
        config: Config,
        select: tuple[str, ...] | None = None,
        ignore: tuple[str, ...] = (),
        *,
        all_notes: bool = False,
    ) -> None:
        self.root = os.path.abspath(config.root)
        self.select = select if select else config.select
        self.ignore = tuple(config.ignore) + tuple(ignore)
        self.severity = tuple((code, Severity(level)) for code, level in config.severity)
        self.target_gpu = config.target_gpu
        # every note of a file (``--all-notes``), not only its first (the default)
        self.notes_per_file: int | None = None if all_notes else LintSettings().notes_per_file
        self.estimator = config.estimator_settings()
        self.effects = config.effects
        self.per_file = tuple(
            (PatternList.parse("", [glob]), codes) for glob, codes in config.per_file_ignores
        )
        self._identity = {
            "select": list(self.select),
            "ignore": list(self.ignore),
            "severity": [[code, level.value] for code, level in self.severity],
            "per-file-ignores": [[glob, list(codes)] for glob, codes in config.per_file_ignores],
            "root": self.root if self.per_file else "",
            "target-gpu": self.target_gpu,
            "notes-per-file": self.notes_per_file,
        }
        if self.estimator is not None:
            self._identity["estimator"] = self.estimator.identity()
        if self.effects is not None:
            self._identity["effects"] = self.effects.identity()
        self._by_extra: dict[tuple[str, ...], LintSettings] = {}

    def identity(self) -> dict:
        """Everything here that changes findings, as JSON-able values for the cache key."""
        return self._identity

    def _relative(self, absolute: str) -> str:
        if absolute.startswith(self.root + os.sep):
            return absolute[len(self.root) + 1 :].replace(os.sep, "/")
        return os.path.basename(absolute)

    def settings_for(self, absolute: str) -> LintSettings:
        extra: tuple[str, ...] = ()
        if self.per_file:
            relative = self._relative(absolute)
            for patterns, codes in self.per_file:
                if patterns.covers(relative):
                    extra += codes
        settings = self._by_extra.get(extra)
        if settings is None:
            settings = LintSettings(
                select=self.select,
                ignore=self.ignore + extra,
                severity=self.severity,
                target_gpu=self.target_gpu,
                estimator=self.estimator,
                effects=self.effects,
                notes_per_file=self.notes_per_file,
            )
            self._by_extra[extra] = settings
        return settings
