"""What a rule is, and how rules are found.

A rule is one small class in one module of :mod:`torchward.analysis.rules` (Fixit's
model): its code and name, its default severity, its documentation (the class
docstring, in fixed sections) and its examples. ``VALID`` snippets must produce no
finding of the rule. Each ``INVALID`` example is a specification: the line the finding
must be reported on, optionally its severity, and what fixing it must produce — the
exact text after the fix and whether the fix is safe — or that no fix is offered. The
registry-driven tests run every example, so the documentation and the behaviour cannot
drift apart, and a rule's fixability (:meth:`Rule.fix_applicabilities`) is read from its
examples: there is no second list of which rules have fixes.

Rules read facts, not trees: :meth:`Rule.check` receives the
:class:`~torchward.analysis.facts.filefacts.FileFacts` that one analysis of the file derived. The
cost of a file is one analysis however many rules run.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, ClassVar

import attrs

from .finding import (
    Applicability,
    Confidence,
    Evidence,
    Finding,
    Fix,
    Payload,
    Proof,
    Severity,
    Span,
)

if TYPE_CHECKING:
    from .facts.filefacts import FileFacts

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Fix safety", "Known limitations")


@attrs.frozen
class Fixed:
    """What fixing an invalid example must produce: the whole text after the first fix of
    the finding, and that fix's applicability (``--fix`` applies only safe ones)."""

    source: str
    applicability: Applicability


@attrs.frozen
class Invalid:
    """A snippet the rule must flag, and how.

    ``line``: the 1-based line of the finding (the first one, when the snippet has
    several). ``severity``: when given, the severity that finding must have. ``fixed``:
    the result of its first fix, or ``None`` when the finding must carry no fix at all.
    """

    source: str
    severity: Severity | None = None
    line: int | None = attrs.field(default=None, kw_only=True)  # required by the tests
    fixed: Fixed | None = attrs.field(default=None, kw_only=True)


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    default_severity: ClassVar[Severity]
    summary: ClassVar[str]
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()
    EXAMPLE_SETTINGS: ClassVar[dict] = {}
    """LintSettings fields the examples run with (TW010 needs a ``target_gpu``)."""

    def check(self, facts: FileFacts) -> Iterable[Finding]:
        raise NotImplementedError  # every concrete rule overrides this

    def finding(
        self,
        span: Span,
        message: str,
        *,
        evidence: Iterable[Evidence] = (),
        confidence: Confidence = Confidence.HIGH,
        severity: Severity | None = None,
        fixes: Iterable[Fix] = (),
        proofs: Iterable[Proof] = (),
        payload: Payload | None = None,
    ) -> Finding:
        """Build a finding of this rule; low confidence lowers the severity one step.

        ``proofs``: what the analysis proved that a fixer's obligations need (see
        :class:`~torchward.analysis.finding.Proof`); without them a fix is unsafe or absent.
        ``payload``: what the rule's fixer needs to write the fix (see
        :class:`~torchward.analysis.finding.Payload`).
        """
        chosen = severity or self.default_severity
        if confidence is Confidence.LOW:
            chosen = chosen.lowered()
        return Finding(
            code=self.code,
            name=self.name,
            severity=chosen,
            confidence=confidence,
            span=span,
            message=message,
            evidence=tuple(evidence),
            fixes=tuple(fixes),
            proofs=frozenset(proofs),
            payload=payload,
        )

    @classmethod
    def documentation(cls) -> str:
        """The rule's user documentation as Markdown (``explain``, hover and docs/rules)."""
        body = textwrap.dedent(cls.__doc__ or "").strip()
        title = f"# {cls.code} {cls.name}\n\n"
        fix = {
            "none": "no automatic fix",
            "safe": "a **safe** fix (`--fix`)",
            "unsafe": "an **unsafe** fix (`--fix --unsafe-fixes`)",
            "safe or unsafe": "a **safe** fix where the analysis proves it, otherwise an **unsafe** one",
        }[cls.fixability()]
        meta = f"Default severity: **{cls.default_severity.value}**. Fix: {fix}.\n\n"
        return title + f"{cls.summary}\n\n" + meta + body + "\n"

    @classmethod
    def fix_applicabilities(cls) -> frozenset[Applicability]:
        """The applicabilities of the fixes this rule's examples specify (empty: no fixes)."""
        return frozenset(
            example.fixed.applicability for example in cls.INVALID if example.fixed is not None
        )

    @classmethod
    def fixability(cls) -> str:
        """``safe``, ``unsafe``, ``safe or unsafe`` or ``none``, as its examples specify."""
        kinds = cls.fix_applicabilities()
        if not kinds:
            return "none"
        if kinds == {Applicability.SAFE}:
            return "safe"
        if Applicability.SAFE in kinds:
            return "safe or unsafe"
        return "unsafe"

    @classmethod
    def doc_sections(cls) -> list[str]:
        return re.findall(r"^## (.+)$", textwrap.dedent(cls.__doc__ or ""), flags=re.M)


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, found by walking the rules package, sorted by code."""
    from . import rules as package

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, Rule)
                and value is not Rule
                and value.__module__ == module.__name__
            ):
                if value.code in found:
                    raise RuntimeError(f"rule code {value.code} is defined twice")
                found[value.code] = value
    return tuple(found[code] for code in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    code = code.upper()
    return next(
        (rule for rule in all_rules() if rule.code == code or rule.name == code.lower()), None
    )
