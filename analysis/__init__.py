"""The analysis engine: source text → facts → findings.

Public names: :func:`analyze_source`, :class:`FileReport`, :class:`Problem`,
:class:`Finding` and its parts, :class:`LintSettings`, :class:`SummaryCache`, :func:`all_rules`,
:func:`rule_by_code`.
"""

from .engine import FileReport, Problem, analyze_source, decode_source
from .facts.summaries import SummaryCache
from .finding import Applicability, Confidence, Edit, Evidence, Finding, Fix, Severity, Span
from .rule import Rule, all_rules, rule_by_code
from .settings import LintSettings

__all__ = [
    "Applicability",
    "Confidence",
    "Edit",
    "Evidence",
    "FileReport",
    "Finding",
    "Fix",
    "LintSettings",
    "Problem",
    "Rule",
    "Severity",
    "Span",
    "SummaryCache",
    "all_rules",
    "analyze_source",
    "decode_source",
    "rule_by_code",
]
