"""Stage fixes: receives a finding and its typed payload and produces the edits that repair
it, built on demand on a lossless tree.

Fixes: the edits that repair a finding, built on demand on a lossless tree.

Findings leave the analysis with ``fixes == ()`` and, for the rules whose fixer is a
:class:`~.fixer.PayloadFixer`, the typed facts that fixer needs (``finding.payload``):
their fixes are written from it, without LibCST. Linting never parses LibCST. Whoever
wants edits asks for them with the source the finding was computed on:

- :func:`fixes_for` ``(source, finding) -> tuple[Fix, ...]`` — the fixes of one finding,
  best first. The language server calls it when it answers a code action (or resolves
  one) for a diagnostic whose ``data`` carries the finding; the tree is parsed once per
  document content and cached, so fixing ten findings of a file parses it once.
- :func:`with_fixes` ``(source, findings) -> tuple[Finding, ...]`` — the same findings
  with their ``fixes`` filled (the CLI's JSON and SARIF reports, ``--fix``).
- :func:`fix_source` — apply fixes to a whole text until nothing more changes
  (``--fix``, ``--diff``, fix-all), see :mod:`.applying`.

Each fix is ``safe`` (cannot change what the program computes beyond the bug) or
``unsafe`` (needs a human look); the reason is in the rule's "Fix safety" section. A
fixer lives in its own module here, named after its rule, and is discovered
(:func:`all_fixers`); a rule with no module has no fixes. A file LibCST cannot parse
yields no fixes. A fixer that crashes yields no fixes for users, but under the engine's
strict mode (``$TORCHWARD_STRICT``, set by the test suite) it raises like any other
internal exception: a swallowed crash would pass every test that expects no fix.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import attrs
import libcst as cst

from ..engine import strict
from ..finding import Finding, Fix
from .applying import FixOutcome, fix_source
from .edits import SourceLines, apply_edits, edits_between
from .fixer import Fixer, PayloadFixer, all_fixers
from .tree import source_tree

log = logging.getLogger(__name__)


def is_fixable(code: str) -> bool:
    """Whether findings of rule ``code`` may carry fixes: read from the rule's examples,
    the one place fixability is declared (a test holds the fixers found by walking this
    package to exactly the rules whose examples specify a fix)."""
    from ..rule import rule_by_code

    rule = rule_by_code(code)
    return rule is not None and bool(rule.fix_applicabilities())


def fixes_for(source: str, finding: Finding) -> tuple[Fix, ...]:
    """The fixes of ``finding`` in ``source`` (the text it was found in), best first."""
    fixer = all_fixers().get(finding.code)
    if fixer is None or finding.origin is not None:
        return ()  # relocated: reported at a call for code in another module
    try:
        if isinstance(fixer, PayloadFixer):  # no LibCST: the rule's payload says it all
            built = fixer.build_from_payload(SourceLines.of(source), finding)
        else:
            built = fixer.build(source_tree(source), finding)
        return tuple(fix for fix in built if fix is not None and fix.edits)
    except cst.ParserSyntaxError:  # the user's text, not a bug: nothing to rewrite
        return ()
    except Exception:  # a fix is a convenience: never let it take a user's editor down
        if strict():
            raise
        log.warning(
            "no fix for %s at %s: the fixer crashed", finding.code, finding.span, exc_info=True
        )
        return ()


def with_fixes(source: str, findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """``findings`` with their fixes filled in (those that have fixes already keep them)."""
    return tuple(
        finding if finding.fixes else attrs.evolve(finding, fixes=fixes_for(source, finding))
        for finding in findings
    )


__all__ = [
    "FixOutcome",
    "Fixer",
    "PayloadFixer",
    "all_fixers",
    "apply_edits",
    "edits_between",
    "fix_source",
    "fixes_for",
    "is_fixable",
    "with_fixes",
]
