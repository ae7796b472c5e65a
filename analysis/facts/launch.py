"""What a plain launch computes: constants and path conditions as facts of the dataflow.

The estimator needs the job a default launch (``python SCRIPT``, no flags, one GPU) runs:
``batch_size = 12``, ``int(os.environ.get("WORLD_SIZE", 1))``, whether an ``if`` runs.
Issue 12 asks that these be facts of the engine, not of a second interpreter
(``docs/design/analysis.md``, "The run configuration and the engine"): the dataflow's
:class:`~torchward.analysis.facts.values.Value` carries a
:class:`~torchward.analysis.facts.constants.ConstantFact` — the Python value, where it was set,
and the :class:`~torchward.analysis.facts.conditions.PathCondition` it holds under — and
:class:`LaunchFolding`, a collaborator of
:class:`~torchward.analysis.facts.interpreter.FunctionRun`, folds them. This module folds expressions; :mod:`.launch_calls` folds calls (parsers, config
dataclasses and files, the environment); :mod:`.launch_paths` turns facts into the
conditions of branches, ``with torch.no_grad()`` blocks and called functions and records
them;
:mod:`.launch_bindings` binds what the plain flow of values does not (a parser's flags,
spawned workers, ``**`` keywords, parameters' defaults); :mod:`.launch_arguments` models
``argparse``.

Constant tracking runs only in *launch mode* (:func:`~torchward.analysis.facts.filefacts.build_launch_facts`): the lint never
pays for it, and launch mode reads a file alone, with one pass per loop (a constant is not
a loop fixpoint: a value reassigned in a loop joins to "undecided" after one pass).

The join of two facts is a lattice join, lexicographic: the better condition wins (a value
on the default path beats one on a path that is off by default), equal conditions with
different values give :data:`UNDECIDED` at that condition. A value bound from an
expression that folds to nothing is bound as undecided *at the binding's condition*, so a
constant is never kept past a reassignment the fold cannot follow.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ..finding import Evidence, Span
from ..syntax.names import dotted
from .conditions import PathCondition
from .constants import (
    BINARY_OPERATORS,
    COMPARISONS,
    PLAIN_ENVIRONMENT,
    TORCH_DTYPES,
    UNDECIDED,
    ConstantFact,
    Items,
    TensorShape,
    apply_folded,
    is_items,
    worst_condition,
)
from .launch_arguments import Namespace
from .launch_bindings import LaunchBindings
from .launch_calls import LaunchCalls
from .values import Value, with_constant

if TYPE_CHECKING:
    from .interpreter import FunctionRun
    from .launch_driver import LaunchDriver

__all__ = ["LaunchFolding"]


# --- folding ------------------------------------------------------------------------

# expressions whose fact the dataflow's value already carries (a name's binding...)
_CARRIED_BY_VALUE = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.NamedExpr, ast.Starred)
_NOWHERE = Evidence(Span(0, 0, 0, 0), "a plain launch")
#: the fact of an expression that folds to nothing, per condition (shared: see ``_fact``)
_UNDECIDED_AT = {
    condition: ConstantFact(UNDECIDED, _NOWHERE, condition) for condition in PathCondition
}


class LaunchFolding:
    """Constant folding for one :class:`~torchward.analysis.facts.interpreter.FunctionRun`
    in launch mode: a collaborator of the run that reads its path condition and its
    names through ``run``, and owns the folding of calls (:class:`~.launch_calls.LaunchCalls`)
    and the bindings the plain flow of values does not make
    (:class:`~.launch_bindings.LaunchBindings`).

    Names and calls are folded through the run (``run.lookup``, ``run._fold_call``,
    ``run._locals``): the points where a demand run
    (:mod:`torchward.analysis.job.launch_demand`) answers from the bindings that reach
    one statement instead."""

    def __init__(self, run: FunctionRun) -> None:
        self.run = run
        self.analyzer = run.analyzer
        # the facts of the expressions this run evaluated (each at most once: one pass)
        self.known: dict[int, tuple[Hashable, PathCondition]] = {}
        self.calls = LaunchCalls(run, self)
        self.bindings = LaunchBindings(run, self)

    @property
    def driver(self) -> LaunchDriver:
        """The analyzer's launch driver: folding runs in launch mode only."""
        driver = self.analyzer.launch_driver
        assert driver is not None, "launch folding outside launch mode"
        return driver

    def attach_constant(self, node: ast.expr, value: Value) -> Value:
        """``value`` (what ``node`` evaluated to) with the fact a plain launch gives it."""
        if node.__class__ is ast.Constant:
            return self._literal(node, value)  # type: ignore[arg-type]
        if isinstance(node, ast.Call):
            name = self._call_name(node)
            fact = self._fact(node, value, name)
            if isinstance(node.func, ast.Attribute):
                self.bindings.declare_argument(node)
                self.bindings.mutated(node)
            self._fold_unevaluated_arguments(node)
            self.bindings.spawned(node, name)
        else:
            fact = self._fact(node, value)
        # an enclosing expression folds from this instead of folding ``node`` again
        self.known[id(node)] = (fact.value, fact.condition)
        self.driver.facts.note_constant(node, fact)
        if value.constant is fact or (value.constant is None and not fact.decided):
            # nothing to carry: the value stays the object the dataflow made (``UNKNOWN``
            # itself — the dataflow tells an unresolved name by identity), and a binding
            # gives it its undecided fact (:meth:`bound_constant`)
            return value
        return with_constant(value, fact)

    def _literal(self, node: ast.Constant, value: Value) -> Value:
        """A literal's value with its fact, made once per node and condition (a fifth of
        the expressions launch mode evaluates are literals)."""
        key = (id(node), self.run.condition)
        literals = self.driver.literals
        known = literals.get(key)
        if known is None:
            made = ConstantFact(node.value, self.evidence_of(node), self.run.condition)
            known = literals[key] = with_constant(value, made)
        fact = known.constant
        assert fact is not None  # made with its fact above
        self.known[id(node)] = (fact.value, fact.condition)
        self.driver.facts.note_constant(node, fact)
        return known

    def _fold_unevaluated_arguments(self, node: ast.Call) -> None:
        """Arguments the dataflow did not evaluate (``model.to(torch.bfloat16)``: a
        module's method returns the module) still get their facts: a reader asks them."""
        for argument in (*node.args, *(k.value for k in node.keywords)):
            if id(argument) not in self.known and not isinstance(argument, ast.Starred):
                fact = self._fact(argument, None)
                self.known[id(argument)] = (fact.value, fact.condition)
                self.driver.facts.note_constant(argument, fact)

    def bound_constant(self, value: Value) -> Value:
        """``value`` as a binding stores it: its fact seen under the binding's condition,
        or undecided there when nothing folded (never a stale constant)."""
        fact = value.constant
        if fact is None:
            fact = _UNDECIDED_AT[self.run.condition]
        else:
            fact = fact.under(self.run.condition)
        return value if fact is value.constant else with_constant(value, fact)

    def augmented_constant(self, node: ast.AugAssign, before: Value, after: Value) -> Value:
        """``after`` (the value ``x += y`` binds) with ``x``'s fact combined with ``y``'s."""
        operator = BINARY_OPERATORS.get(type(node.op))
        fact = before.constant
        left = (fact.value, fact.condition) if fact is not None else (UNDECIDED, self.run.condition)
        found, condition = apply_folded(
            operator, (left, self.fold_pair(node.value)), self.run.condition
        )
        return with_constant(after, ConstantFact(found, self.evidence_of(node), condition))

    def fold(self, node: ast.expr, value: Value | None = None) -> ConstantFact:
        """The fact of ``node`` from its operands' facts (``value``: what the dataflow
        evaluated it to, whose fact names and attributes already carry)."""
        return self._fact(node, value, self._call_name(node) if isinstance(node, ast.Call) else "")

    def _fact(self, node: ast.expr, value: Value | None, call_name: str = "") -> ConstantFact:
        if value is not None and value.constant is not None and isinstance(node, _CARRIED_BY_VALUE):
            return value.constant
        found, condition = (
            self.run._fold_call(node, call_name)
            if isinstance(node, ast.Call)
            else self.fold_pair(node)
        )
        if found is UNDECIDED:
            # most expressions (a model's call, a tensor) fold to nothing: one shared fact
            # per condition, no evidence built (nothing cites where a value is unknown)
            return _UNDECIDED_AT[condition]
        return ConstantFact(found, self.evidence_of(node), condition)

    def _call_name(self, node: ast.Call) -> str:
        """The name a call is folded by: qualified through the imports, else as written."""
        path = dotted(node.func)
        return (self.run.qualified_dotted(path) or path) if path is not None else ""

    def fold_pair(self, node: ast.expr) -> tuple[Hashable, PathCondition]:
        """(value, the worst condition of what it was computed from)."""
        known = self.known.get(id(node))
        if known is not None:
            return known  # evaluated just now, as an operand of what is folded
        folder = _FOLDERS.get(type(node))
        return folder(self, node) if folder is not None else (UNDECIDED, self.run.condition)

    def _fold_constant(self, node: ast.Constant) -> tuple[Hashable, PathCondition]:
        return node.value, self.run.condition

    def _fold_name(self, node: ast.Name) -> tuple[Hashable, PathCondition]:
        found = self.run.lookup(node.id)
        fact = found.constant if found is not None else None
        if fact is None and node.id == "__name__" and found is None:
            return "__main__", self.run.condition  # the launched script
        return (fact.value, fact.condition) if fact is not None else (UNDECIDED, self.run.condition)

    def _fold_elements(
        self, node: ast.Tuple | ast.List | ast.Set
    ) -> tuple[Hashable, PathCondition]:
        here = self.run.condition
        parts = [self.fold_pair(e) for e in node.elts]
        if any(isinstance(e, ast.Starred) for e in node.elts) or any(
            p[0] is UNDECIDED for p in parts
        ):
            return UNDECIDED, here
        gathered = (frozenset if isinstance(node, ast.Set) else tuple)(p[0] for p in parts)
        return apply_folded(lambda: gathered, (), worst_condition(here, parts))

    def _fold_dict(self, node: ast.Dict) -> tuple[Hashable, PathCondition]:
        here = self.run.condition
        if any(k is None for k in node.keys):
            return UNDECIDED, here
        keys = [self.fold_pair(k) for k in node.keys if k is not None]
        items = [self.fold_pair(v) for v in node.values]
        if any(p[0] is UNDECIDED for p in (*keys, *items)):
            return UNDECIDED, here
        return Items(zip((k[0] for k in keys), (v[0] for v in items))), worst_condition(
            here, [*keys, *items]
        )

    def _fold_binary(self, node: ast.BinOp) -> tuple[Hashable, PathCondition]:
        left, right = self.fold_pair(node.left), self.fold_pair(node.right)
        return apply_folded(BINARY_OPERATORS.get(type(node.op)), (left, right), self.run.condition)

    def _fold_unary(self, node: ast.UnaryOp) -> tuple[Hashable, PathCondition]:
        operand = self.fold_pair(node.operand)
        return apply_folded(_UNARY_OPERATORS.get(type(node.op)), (operand,), self.run.condition)

    def _fold_choice(self, node: ast.IfExp) -> tuple[Hashable, PathCondition]:
        test = self.truth(node.test)
        if test is None:
            return UNDECIDED, self.run.condition
        chosen = self.fold_pair(node.body if test[0] else node.orelse)
        return chosen[0], worst_condition(self.run.condition, [test, chosen])

    def test_fact(self, test: ast.expr, folded: ConstantFact | None) -> ConstantFact | None:
        """The fact of an ``if`` / ``while`` test as a branch reads it: ``folded`` (its
        value), or — undecided — its truth alone when that is decided
        (:meth:`truth`)."""
        if folded is not None and folded.decided:
            return folded
        truth = self.truth(test)
        if truth is None:
            return folded
        return ConstantFact(truth[0], self.evidence_of(test), truth[1])

    def truth(self, node: ast.expr) -> tuple[bool, PathCondition] | None:
        """Whether ``node`` is true on a plain launch, where its value may not be known:
        ``Path(opt.model).is_file() or opt.model.endswith(".pt")`` is true once its last
        operand is, whatever the first holds; ``a and b`` false once one operand is.
        None: undecided."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.truth(node.operand)
            return None if inner is None else (not inner[0], inner[1])
        if isinstance(node, ast.BoolOp):
            deciding = isinstance(node.op, ast.Or)  # the operand truth that decides it all
            operands = [self.truth(operand) for operand in node.values]
            for operand in operands:
                if operand is not None and operand[0] is deciding:
                    return deciding, self.run.condition.worst(operand[1])
            if any(operand is None for operand in operands):
                return None
            return not deciding, worst_condition(self.run.condition, operands)  # type: ignore[arg-type]
        value, condition = self.fold_pair(node)
        if value is UNDECIDED:
            return None
        try:
            return bool(value), condition
        except Exception:  # a value whose truth cannot be taken
            return None

    def _fold_call_node(self, node: ast.Call) -> tuple[Hashable, PathCondition]:
        return self.run._fold_call(node, self._call_name(node))

    def _fold_bool(self, node: ast.BoolOp) -> tuple[Hashable, PathCondition]:
        """``a and b`` / ``a or b`` with Python's short circuit: ``args.fp16 or False``."""
        used: list[tuple[Hashable, PathCondition]] = []
        for operand in node.values:
            part = self.fold_pair(operand)
            used.append(part)
            if part[0] is UNDECIDED:
                return UNDECIDED, self.run.condition
            if isinstance(node.op, ast.And) and not part[0]:
                break
            if isinstance(node.op, ast.Or) and part[0]:
                break
        return used[-1][0], worst_condition(self.run.condition, used)

    def _fold_compare(self, node: ast.Compare) -> tuple[Hashable, PathCondition]:
        left = self.fold_pair(node.left)
        used = [left]
        for op, comparator in zip(node.ops, node.comparators):
            right = self.fold_pair(comparator)
            used.append(right)
            holds = apply_folded(COMPARISONS.get(type(op)), (left, right), self.run.condition)[0]
            if holds is UNDECIDED:
                return UNDECIDED, self.run.condition
            if not holds:
                return False, worst_condition(self.run.condition, used)
            left = right
        return True, worst_condition(self.run.condition, used)

    def _fold_subscript(self, node: ast.Subscript) -> tuple[Hashable, PathCondition]:
        base, key = self.fold_pair(node.value), self.fold_pair(node.slice)
        if base[0] is UNDECIDED or key[0] is UNDECIDED or isinstance(node.slice, ast.Slice):
            return UNDECIDED, self.run.condition
        container = base[0]
        try:
            if is_items(container):
                found = dict(container)[key[0]]  # a dict literal, kept as sorted items
            else:
                found = container[key[0]]  # type: ignore[index]
        except Exception:
            return UNDECIDED, self.run.condition
        return found, worst_condition(self.run.condition, [base, key])

    def fold_attribute(self, node: ast.Attribute) -> tuple[Hashable, PathCondition]:
        name = self.run.qualified(node) or dotted(node)
        if name == "sys.argv":
            return ("SCRIPT",), self.run.condition  # a plain launch passes no arguments
        if name == "os.environ":
            return PLAIN_ENVIRONMENT, self.run.condition  # no launcher variables
        if name and name.startswith("torch.") and name.rsplit(".", 1)[-1] in TORCH_DTYPES:
            return "torch." + name.rsplit(".", 1)[-1], self.run.condition
        base, condition = self.fold_pair(node.value)
        if isinstance(base, Namespace):
            return base.get(node.attr, UNDECIDED), condition
        if isinstance(base, TensorShape) and node.attr in ("shape", "ndim"):
            return (base.dims if node.attr == "shape" else len(base.dims)), condition
        return UNDECIDED, self.run.condition

    def evidence_of(self, node: ast.AST) -> Evidence:
        """Where a fact was set: the node's own position (columns as the parser counts
        them, in UTF-8 bytes — a fact names its line; converting columns for every
        evaluated expression cost a tenth of launch mode)."""
        line = getattr(node, "lineno", 0)
        span = Span(
            line,
            getattr(node, "col_offset", 0),
            getattr(node, "end_lineno", None) or line,
            getattr(node, "end_col_offset", None) or 0,
        )
        return Evidence(span, "a plain launch", self.analyzer.evidence_path)


_UNARY_OPERATORS: dict[type, Any] = {
    ast.Not: lambda a: not a,
    ast.USub: lambda a: -a,
    ast.UAdd: lambda a: +a,
}
#: how each kind of expression folds (a table: a chain of ``isinstance`` tests was a tenth
#: of launch mode)
_FOLDERS: dict[type, Any] = {
    ast.Constant: LaunchFolding._fold_constant,
    ast.Name: LaunchFolding._fold_name,
    ast.Tuple: LaunchFolding._fold_elements,
    ast.List: LaunchFolding._fold_elements,
    ast.Set: LaunchFolding._fold_elements,
    ast.Dict: LaunchFolding._fold_dict,
    ast.BinOp: LaunchFolding._fold_binary,
    ast.UnaryOp: LaunchFolding._fold_unary,
    ast.BoolOp: LaunchFolding._fold_bool,
    ast.Compare: LaunchFolding._fold_compare,
    ast.IfExp: LaunchFolding._fold_choice,
    ast.Subscript: LaunchFolding._fold_subscript,
    ast.Call: LaunchFolding._fold_call_node,
    # through the run: a demand run answers ``args.batch_size`` rebound by an assignment
    # before the base folding looks the name up
    ast.Attribute: lambda folding, node: folding.run._fold_attribute(node),
}
