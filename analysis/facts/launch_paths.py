"""Path conditions of a plain launch, and the facts launch mode records by node.

How an ``if`` test's launch fact turns into the conditions of its branches, what a
function's body starts under (its call's condition; validation when grad is off or its
name evaluates; an entry nothing calls), and :class:`LaunchFacts`, the record the script
reader queries: the fact of every evaluated expression and the condition of every
statement, joined over every visit. Used by :mod:`.launch` and the analyzer.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from ..syntax.names import dotted
from . import catalog
from .conditions import PathCondition
from .constants import ConstantFact, join_constants

if TYPE_CHECKING:
    from .semantic import FunctionInfo, ModuleIndex

__all__ = [
    "LaunchFacts",
    "branch_conditions",
    "evaluates",
    "launch_entry_condition",
    "launch_entry_points",
    "names_distributed_launch",
    "periodic",
    "uncalled",
    "unreached_condition",
]

_EVALUATION = re.compile(
    r"(^|_)(eval|evaluate|evaluation|valid|validate|validation|test|sample|sampling|generate|inference|predict)",
    re.I,
)
_DISTRIBUTED = re.compile(r"ddp|distributed|world_size|local_rank|multiprocessing|\bRANK\b|nproc")


def evaluates(function_name: str) -> bool:
    """A function named for evaluation, sampling or inference: its job is not training."""
    return bool(_EVALUATION.search(function_name))


def branch_conditions(
    test: ast.expr, decided: ConstantFact | None
) -> tuple[PathCondition, PathCondition]:
    """The conditions of an ``if``'s body and ``else`` given its test's fact.

    A test the defaults decide makes one branch default and the other off; an undecided
    test makes both unsure — except that a test naming a distributed set-up puts its body
    on the multi-GPU path (and an ``else`` of a decided distributed test too).
    """
    distributed = names_distributed_launch(test)
    if decided is None or not decided.decided or decided.condition is not PathCondition.DEFAULT:
        return (
            PathCondition.MULTI_GPU if distributed else PathCondition.UNSURE,
            PathCondition.UNSURE,
        )
    try:
        holds = bool(decided.value)
    except Exception:  # a value whose truth cannot be taken
        return PathCondition.UNSURE, PathCondition.UNSURE
    skipped = PathCondition.MULTI_GPU if distributed else PathCondition.OFF
    return (PathCondition.DEFAULT, skipped) if holds else (skipped, PathCondition.DEFAULT)


def periodic(test: ast.expr) -> bool:
    """``step % N == 0`` (or ``!=``, ``not step % N``): in a loop whose counter the
    defaults leave open, a gate that opens every N iterations — each arm runs."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
        return isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod)
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq))
        and any(
            isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod)
            for side in (test.left, test.comparators[0])
        )
        and any(isinstance(side, ast.Constant) for side in (test.left, test.comparators[0]))
    )


def names_distributed_launch(test: ast.expr) -> bool:
    """Whether an ``if`` test names a distributed set-up (``if ddp:``, ``args.world_size
    > 1``): its body runs only under a distributed launch."""
    return bool(_DISTRIBUTED.search(_words(test)))


def _words(test: ast.expr) -> str:
    """The names, attributes and strings a test mentions (what ``_DISTRIBUTED`` is matched
    against), gathered down the expressions a test is made of (``ast.walk`` visited every
    operator and context object too: a twentieth of launch mode)."""
    words: list[str] = []
    pending: list[ast.AST] = [test]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is ast.Name:
            words.append(node.id)  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            words.append(node.attr)  # type: ignore[attr-defined]
            pending.append(node.value)  # type: ignore[attr-defined]
        elif kind is ast.Constant:
            if isinstance(node.value, str):  # type: ignore[attr-defined]
                words.append(node.value)  # type: ignore[attr-defined]
        elif kind is ast.Compare:
            pending.append(node.left)  # type: ignore[attr-defined]
            pending.extend(node.comparators)  # type: ignore[attr-defined]
        elif kind is ast.BoolOp:
            pending.extend(node.values)  # type: ignore[attr-defined]
        elif kind is ast.UnaryOp:
            pending.append(node.operand)  # type: ignore[attr-defined]
        elif kind is ast.Call:
            pending.append(node.func)  # type: ignore[attr-defined]
            pending.extend(node.args)  # type: ignore[attr-defined]
            pending.extend(k.value for k in node.keywords)  # type: ignore[attr-defined]
        else:
            pending.extend(ast.iter_child_nodes(node))
    return " ".join(reversed(words))


def launch_entry_condition(
    info: FunctionInfo, grad_enabled: bool, condition: PathCondition
) -> PathCondition:
    """The condition a function's body starts under: its call's, made ``validation`` by a
    grad-disabled call or a name that evaluates (``@torch.no_grad() def evaluate()``)."""
    if not grad_enabled or evaluates(info.node.name):
        return condition.worst(PathCondition.VALIDATION)
    return condition


def launch_entry_points(index: ModuleIndex, source: str) -> list[FunctionInfo]:
    """Top-level functions the module's code neither calls nor passes: what a launch runs
    through a decorator (``@call_parse def main``), in file order. Uses are counted in the
    source without its comments (a walk of the tree cost a fifth of launch mode):
    ``name(`` (its ``def`` is one) and ``name`` after ``(``, ``,`` or ``=`` (a callback),
    each name found by ``str.find`` (one regular expression alternating every name cost
    a tenth of launch mode). A name a docstring calls is not taken for an entry; it is
    then folded when asked about, where it is written."""
    if not index.top_functions:
        return []
    code = _COMMENT.sub("", source)
    uses = {name: _uses(code, name) for name in index.top_functions}
    entries = [info for name, info in index.top_functions.items() if uses[name] <= 1]
    return sorted(entries, key=lambda info: info.node.lineno)


_COMMENT = re.compile(r"#[^\n]*")
_SPACE = " \t\r\n\f\v"


def _uses(code: str, name: str) -> int:
    """How often ``name`` is called (``name(``) or passed (after ``(``, ``,`` or ``=``) in
    ``code``: an occurrence both passed and called counts twice; a whole word only."""
    count, end_of_code = 0, len(code)
    start = code.find(name)
    while start != -1:
        end = start + len(name)
        if not _in_word(code, start - 1) and not _in_word(code, end):
            before = start - 1
            while before >= 0 and code[before] in _SPACE:
                before -= 1
            after = end
            while after < end_of_code and code[after] in _SPACE:
                after += 1
            count += (before >= 0 and code[before] in "(,=") + (
                after < end_of_code and code[after] == "("
            )
        start = code.find(name, end)
    return count


def _in_word(code: str, at: int) -> bool:
    return 0 <= at < len(code) and (code[at].isalnum() or code[at] == "_")


def uncalled(info: FunctionInfo, unreferenced: bool = False) -> PathCondition:
    """The condition of a function the flow did not reach through a call: an entry point
    or callback runs (default); a method other than ``forward`` and the dunders may never
    run (unsure); a function a launched script never names (``unreferenced``,
    :func:`~.launch_unused.unused_functions`) does not run (off): it is another job's
    entry or an unused helper, not this job."""
    if unreferenced:
        return PathCondition.OFF
    name = info.node.name
    if info.is_method and not name.startswith("__") and name != "forward":
        return PathCondition.UNSURE
    return PathCondition.DEFAULT


def unreached_condition(
    info: FunctionInfo, statement: ast.AST, skipped: PathCondition | None = None
) -> PathCondition:
    """The condition of a statement in a function no call of a plain launch reached (a
    framework's hook, a method called through what the analysis cannot resolve), read
    from where it sits, without running the function: the body starts as a function
    nothing calls does (:func:`uncalled`) — or, when its only calls are on paths a plain
    launch does not take (``skipped``), under the best of those — made validation when
    its name evaluates; every gate around the statement is unsure — no launch decided
    it — and a grad-disabling ``with`` makes it validation. Deterministic, whatever was
    asked before."""
    entry = uncalled(info) if skipped is None else skipped
    condition = launch_entry_condition(info, True, entry)
    line = getattr(statement, "lineno", 0)
    body: list[ast.stmt] = info.node.body
    while True:
        around = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if around is None or around is statement:
            return condition
        if isinstance(around, (ast.If, ast.While)) and line <= (
            around.test.end_lineno or around.test.lineno
        ):
            return condition  # in the test: evaluated before the gate
        if isinstance(around, (ast.If, ast.While)):
            condition = condition.worst(PathCondition.UNSURE)
        elif isinstance(around, (ast.With, ast.AsyncWith)) and any(
            _disables_grad(item.context_expr) for item in around.items
        ):
            condition = condition.worst(PathCondition.VALIDATION)
        elif isinstance(around, ast.Try):
            body = [*around.body, *around.orelse, *around.finalbody]
            body += [s for handler in around.handlers for s in handler.body]
            continue
        inner = [*getattr(around, "body", ()), *getattr(around, "orelse", ())]
        if not inner or isinstance(around, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return condition
        body = inner


def _disables_grad(context: ast.expr) -> bool:
    """``torch.no_grad()`` and friends as the engine's catalog names them, in either arm of
    a conditional, and ``set_grad_enabled(False)`` (the import table is not consulted: the
    catalog's leaf-name test needs none)."""
    if isinstance(context, ast.IfExp):
        return _disables_grad(context.body) or _disables_grad(context.orelse)
    func = context.func if isinstance(context, ast.Call) else context
    name = dotted(func) or ""
    if catalog.is_grad_disabling(name):
        return not (
            isinstance(context, ast.Call)
            and context.args
            and isinstance(context.args[0], ast.Constant)
            and context.args[0].value is False
        )
    return (
        name.rsplit(".", 1)[-1] == catalog.GRAD_SETTING.rsplit(".", 1)[-1]
        and isinstance(context, ast.Call)
        and bool(context.args)
        and isinstance(context.args[0], ast.Constant)
        and context.args[0].value is False
    )


@attrs.define
class LaunchFacts:
    """What launch mode recorded, by node: the fact of every expression it evaluated and
    the condition of every statement it ran (joined over every visit: a function called
    from two places holds the better of the two)."""

    constants: dict[int, ConstantFact] = attrs.field(factory=dict)
    conditions: dict[int, PathCondition] = attrs.field(factory=dict)
    # folds an expression nothing has evaluated yet, where it is written (set by the driver)
    on_demand: Callable[[ast.AST], None] | None = None
    # the condition of a statement no analysis of the launch ran (see ``condition``)
    unreached: Callable[[ast.AST], PathCondition | None] | None = None

    def note_constant(self, node: ast.AST, fact: ConstantFact) -> None:
        key = id(node)
        joined = join_constants(self.constants.get(key), fact)
        if joined is not None:
            self.constants[key] = joined

    def note_condition(self, node: ast.AST, condition: PathCondition) -> None:
        key = id(node)
        known = self.conditions.get(key)
        self.conditions[key] = (
            condition if known is None else PathCondition.best((known, condition))
        )

    def constant(self, node: ast.AST) -> ConstantFact | None:
        if id(node) not in self.constants and self.on_demand is not None:
            self.on_demand(node)
        return self.constants.get(id(node))

    def condition(self, node: ast.AST) -> PathCondition | None:
        """The condition ``node`` (a statement) ran under on a plain launch; for one the
        launch never reached, where it sits says (:func:`unreached_condition`); None: a
        module-level statement nothing ran."""
        known = self.conditions.get(id(node))
        if known is None and self.unreached is not None:
            return self.unreached(node)
        return known
