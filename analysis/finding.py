"""Findings as plain values.

A finding must travel: pickled between worker processes of the CLI, cached on disk,
serialised to JSON, carried inside an LSP diagnostic's ``data`` field and turned back
into the same edits by ``--fix`` and by the editor's quick fix. So it holds no syntax
nodes and no closures, only numbers and strings.

Positions follow one convention everywhere in the analysis: ``line`` is 1-based,
``column`` is 0-based and counts Unicode code points of the line (a ``str`` index).
``ast`` reports UTF-8 byte offsets; :mod:`torchward.analysis.syntax.positions` converts them once.
Reporters and the server convert these to their own conventions (1-based columns in
JSON, UTF-16 units on the LSP wire).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs


class Severity(str, enum.Enum):
    """How bad the bug is when the finding is right.

    ``hint`` is below ``note``: right about the code, but rarely worth acting on (a
    sampled kind of note that maintainers would not act on, issue 28). Editors show hints
    faintly and outside the problem count, ``torchward check`` hides them unless asked
    (``--show-hints``), and no ``--fail-on`` threshold ever reaches them.
    """

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    HINT = "hint"

    @property
    def rank(self) -> int:
        """Higher is worse: used for ``--fail-on`` thresholds."""
        return _RANKS[self.value]

    def lowered(self) -> Severity:
        """One step less severe, down to a note: a note stays a note and a hint a hint.

        Low confidence lowers a finding (``Rule.finding``), but a note does not become a
        hint for it: a hint is a judgement that the finding, even when right, is rarely
        worth acting on, which each rule makes by evidence (issue 28), not by confidence.
        """
        return _LOWERED[self.value]


_RANKS = {"hint": 0, "note": 1, "warning": 2, "error": 3}
_LOWERED = {
    "error": Severity.WARNING,
    "warning": Severity.NOTE,
    "note": Severity.NOTE,
    "hint": Severity.HINT,
}


class Confidence(str, enum.Enum):
    """How sure the analysis is that the finding is right.

    ``high``: every fact came from bindings and dataflow. ``medium``: a fact came from a
    weaker source (an unresolved call, a type annotation). ``low``: a fact rests on a name
    heuristic; such findings are lowered one severity step.
    """

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Applicability(str, enum.Enum):
    """Whether a fix may be applied without a human look (ruff's model)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


class Proof(str, enum.Enum):
    """A fact the analysis proved about a finding that a fixer's proof obligations need.

    Fixes are built long after the analysis (from the cache, in the language server, in
    another process), so a fixer cannot ask the dataflow; the rule records what it proved
    here, and a fixer offers a *safe* fix only when every obligation it lists holds.
    Absent means "not proven", never "proven false".
    """

    STORED_TENSOR = "stored-tensor"
    """TW001: the stored value is a ``torch.Tensor`` (a loss, a tensor operation's result),
    not a tuple, dict, ``ModelOutput``, number or object whose type the analysis guessed."""
    LOOP_NEVER_BACKPROPAGATED = "loop-never-backpropagated"
    """TW002: nothing computed in the loop can reach a ``backward()`` or
    ``autograd.grad``: none runs in the loop, after it in the same function or around it,
    no value from the loop is stored where it outlives the function, and the function
    returns no value that carries a graph."""
    TENSOR_CHECKPOINT = "tensor-checkpoint"
    """TW023: the loaded file is one the project writes with ``torch.save`` at the same
    path, and every write it may read saves only tensors, containers of them and
    primitives (a ``state_dict()``, a dict literal of those), so ``weights_only=True``
    loads it."""
    TORCH_OPTIMIZER = "torch-optimizer"
    """TW003: the stepped optimizer was built by a ``torch.optim`` constructor the analysis
    followed (not guessed from a name), so ``zero_grad(set_to_none=True)`` exists."""


@attrs.frozen(order=True)
class Span:
    """A range in one file: 1-based lines, 0-based code-point columns, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def contains(self, inner: Span) -> bool:
        """Whether ``inner`` lies wholly inside this range (ends included)."""
        return (self.line, self.column) <= (inner.line, inner.column) and (
            inner.end_line,
            inner.end_column,
        ) <= (self.end_line, self.end_column)


@attrs.frozen
class Evidence:
    """One link of a finding's chain of proof: a place and a sentence about it."""

    span: Span
    message: str
    path: str | None = None  # None: the finding's own file


def evidence_order(evidence: Evidence) -> tuple[object, ...]:
    """A total order of evidence, by place then message: joins keep the evidence that
    comes first in the file, whichever side of the join it is on."""
    span = evidence.span
    return (
        evidence.path or "",
        span.line,
        span.column,
        span.end_line,
        span.end_column,
        evidence.message,
    )


@attrs.frozen
class Edit:
    """Replace the text of ``span`` with ``text``."""

    span: Span
    text: str


@attrs.frozen
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...] = ()


class Payload:
    """The typed facts a rule hands the fixer of its findings: the ranges, names and proven
    facts the fix needs, so the fixer never re-reads them from the text.

    A rule with a fixable finding defines one frozen ``attrs`` subclass next to itself, with
    a unique ``kind`` and fields of ``str``, ``int``, ``bool``, :class:`Span` or
    ``Span | None`` only: a finding travels as JSON (the cache, an LSP diagnostic's ``data``), and
    :meth:`to_dict` / :meth:`from_dict` carry the payload by its ``kind``; a process that
    reads findings it did not compute (the CLI's main process, from its workers or the
    cache) loads the rules to know the kinds. A payload whose ``kind`` is still unknown
    comes back as ``None``: no fix, never a guess.
    """

    kind: ClassVar[str]
    _kinds: ClassVar[dict[str, type[Payload]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:  # attrs rebuilds a slotted class: the last one counts
            Payload._kinds[cls.kind] = cls

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"kind": self.kind}
        for field in attrs.fields(type(self)):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            data[field.name] = attrs.astuple(value) if isinstance(value, Span) else value
        return data

    @staticmethod
    def from_dict(data: dict | None) -> Payload | None:
        if not data:
            return None
        kind = Payload._kinds.get(data.get("kind", ""))
        if kind is None:  # a process that received findings without running the rules
            from .rule import all_rules  # (a worker's, the cache's): loading them registers

            all_rules()
            kind = Payload._kinds.get(data.get("kind", ""))
        if kind is None:
            return None
        values = {}
        for field in attrs.fields(kind):  # type: ignore[arg-type]
            value = data[field.name]
            spans = field.type in (Span, "Span", "Span | None") and value is not None
            values[field.name] = Span(*value) if spans else value
        return kind(**values)


@attrs.frozen
class Finding:
    code: str
    name: str
    severity: Severity
    confidence: Confidence
    span: Span
    message: str
    path: str = ""
    evidence: tuple[Evidence, ...] = ()
    fixes: tuple[Fix, ...] = ()
    proofs: frozenset[Proof] = frozenset()  # what the analysis proved for the fixers
    payload: Payload | None = None  # what the rule's fixer needs (see :class:`Payload`)
    # Reported at a call in this file for code in the module at this path (the finding
    # is relocated, see :mod:`torchward.analysis.workspace.relocate`); None: the span is
    # the code itself. A relocated finding has no fix: its span is not the code to edit.
    origin: str | None = None

    def to_dict(self) -> dict:
        """The stable JSON shape (documented in docs/json-format.md): 1-based columns."""

        def position(span: Span) -> dict:
            return {
                "line": span.line,
                "column": span.column + 1,
                "end_line": span.end_line,
                "end_column": span.end_column + 1,
            }

        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "confidence": self.confidence.value,
            "path": self.path,
            **position(self.span),
            "message": self.message,
            "evidence": [
                {"path": item.path or self.path, **position(item.span), "message": item.message}
                for item in self.evidence
            ],
            "fixes": [
                {
                    "title": fix.title,
                    "applicability": fix.applicability.value,
                    "edits": [{**position(edit.span), "text": edit.text} for edit in fix.edits],
                }
                for fix in self.fixes
            ],
            "proofs": sorted(proof.value for proof in self.proofs),
            "payload": self.payload.to_dict() if self.payload is not None else None,
            "origin": self.origin,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Finding:
        """Inverse of :meth:`to_dict` (the cache and the LSP ``data`` field use it)."""

        def span_of(item: dict) -> Span:
            return Span(item["line"], item["column"] - 1, item["end_line"], item["end_column"] - 1)

        return cls(
            code=data["code"],
            name=data["name"],
            severity=Severity(data["severity"]),
            confidence=Confidence(data["confidence"]),
            span=span_of(data),
            message=data["message"],
            path=data["path"],
            evidence=tuple(
                Evidence(span_of(e), e["message"], None if e["path"] == data["path"] else e["path"])
                for e in data["evidence"]
            ),
            fixes=tuple(
                Fix(
                    f["title"],
                    Applicability(f["applicability"]),
                    tuple(Edit(span_of(e), e["text"]) for e in f["edits"]),
                )
                for f in data["fixes"]
            ),
            proofs=frozenset(
                Proof(p) for p in data.get("proofs", ()) if p in Proof._value2member_map_
            ),
            payload=Payload.from_dict(data.get("payload")),
            origin=data.get("origin"),
        )
