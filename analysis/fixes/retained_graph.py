"""TW001 retained-graph: store ``x.detach()``, or ``x.item()`` when only a number is kept.

The finding's span is the storing statement (``losses.append(loss)``, ``total += loss``)
or the subscript target of ``hist[k] = out``; the stored expression is the appended
argument, the augmented value, or the assigned value. The edit replaces that expression
``e`` by ``e.detach()`` — parenthesised, ``(a * b).detach()``, when ``e`` is not atomic,
so the call applies to the whole stored value and never to its last operand.

``.detach()`` is **safe** only when all of these proof obligations hold:

1. *It is a tensor.* The analysis proved the stored value is a ``torch.Tensor``
   (:attr:`~torchward.analysis.finding.Proof.STORED_TENSOR`: a loss, a tensor
   operation's result, the output of a ``torch.nn`` layer that returns one tensor), not a tuple, dict, ``ModelOutput`` or number, on which
   ``.detach()`` would raise.
2. *The container is private to the function.* It is a plain local name bound in this
   function (not an attribute such as ``self.losses``, not a parameter, not declared
   ``global``/``nonlocal``), so no code the analysis cannot see reads it.
3. *Nothing it holds can reach a backward.* Every other read of the container in the
   function ends in a number or in a report — ``len(c)``, ``print(c)``, ``float(c)``,
   ``c.item()``, an f-string, a comparison — or rebinds or clears it. A read that
   could feed a loss (``sum(c)``, ``torch.stack(c)``, ``for v in c``, ``return c``,
   ``c.backward()``, ``loss = c / n``) leaves the obligation unproven: the values might
   be backpropagated later (summed micro-batch losses, the last chunk of logits).

When 1 holds but 2 or 3 does not, ``.detach()`` is offered as **unsafe** (a person must
check the later uses); when 1 does not hold, no fix is offered at all: on a tuple, a
namedtuple or a ``ModelOutput`` ``.detach()`` raises ``AttributeError``. ``.item()`` is
offered first when the value is a tensor and the container is a number accumulator whose
every other use is arithmetic, formatting or printing — then a float is what the code
wanted — but it changes the type (and what ``print`` shows): always unsafe.
"""

from __future__ import annotations

import libcst as cst

from ..facts.tensors import TENSOR_METHODS
from ..finding import Applicability, Finding, Proof
from .fixer import Fixer
from .tree import Rewrite, SourceTree, parenthesized

STORING_METHODS = {"append": -1, "add": -1, "insert": 1, "appendleft": -1, "put": 0}
NUMERIC_CALLS = {"print", "float", "int", "round", "str", "abs", "format", "max", "min", "len"}
# Calls whose result is a number, a string or nothing: a value read only by them cannot
# reach a backward. ``round``/``abs``/``max``/``min``/``sum`` return tensors: not here.
REPORTING_CALLS = {"print", "len", "float", "int", "str", "repr", "format", "bool"}
NUMBER_METHODS = {"item", "tolist", "clear"}  # ``c.item()``: a float; ``c.clear()``: empties
# Calls that compute a new value from their arguments and do nothing else: a read that
# passes through them still has to end in a number or a report to be inert.
PURE_CALLS = {
    "sum",
    "max",
    "min",
    "abs",
    "round",
    "sorted",
    "list",
    "tuple",
    "torch.stack",
    "torch.cat",
    "torch.mean",
    "torch.sum",
    "torch.tensor",
    "np.mean",
    "np.sum",
    "np.array",
    "numpy.mean",
    "statistics.mean",
}
LITERALS = (
    cst.Tuple,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
    cst.GeneratorExp,
)


def stored_expression(tree: SourceTree, finding: Finding):
    """(the stored expression, the container expression) of the storing statement."""
    statement = tree.innermost_statement_at(finding.span)
    if not isinstance(statement, cst.SimpleStatementLine):
        return None, None
    for small in statement.body:
        if not _contains(tree, small, finding):
            continue
        if isinstance(small, cst.AugAssign):
            return small.value, small.target
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            return small.value, target.value if isinstance(target, cst.Subscript) else target
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in STORING_METHODS:
                positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
                index = STORING_METHODS[call.func.attr.value]
                if positional and (index == -1 or index < len(positional)):
                    return positional[index].value, call.func.value
    return None, None


def _contains(tree: SourceTree, node: cst.CSTNode, finding: Finding) -> bool:
    return tree.spans[node].contains(finding.span) or finding.span.contains(tree.spans[node])


def _is_number_accumulator(tree: SourceTree, container: cst.BaseExpression, statement) -> bool:
    """``container`` is a plain name bound to a number literal, and every other use of it in
    the function is arithmetic, a comparison, formatting or printing."""
    if not isinstance(container, cst.Name) or not isinstance(statement, cst.AugAssign):
        return False
    scope = tree.function_of(statement)
    bound_to_number = False
    for name in tree.within(tree.spans[scope], cst.Name):
        if name.value != container.value or name is container or not _is_variable(tree, name):
            continue
        parent = tree.parents.get(name)
        if isinstance(parent, cst.AssignTarget):
            value = tree.parents[parent].value
            if not isinstance(value, (cst.Integer, cst.Float)):
                return False
            bound_to_number = True
        elif (isinstance(parent, cst.AugAssign) and parent.target is name) or isinstance(
            parent,
            (
                cst.BinaryOperation,
                cst.Comparison,
                cst.ComparisonTarget,
                cst.UnaryOperation,
                cst.FormattedStringExpression,
                cst.Param,
            ),
        ):
            continue
        elif isinstance(parent, cst.Arg):
            call = tree.parents.get(parent)
            if not (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Name)
                and call.func.value in NUMERIC_CALLS
            ):
                return False
        else:
            return False
    return bound_to_number


def container_is_private(tree: SourceTree, container: cst.BaseExpression | None) -> bool:
    """Obligation 2: a local name that this function binds itself, visible to nobody else."""
    if not isinstance(container, cst.Name):
        return False
    scope = tree.function_of(container)
    if not isinstance(scope, cst.FunctionDef):
        return False  # module level: any importer or function may read it
    if any(
        param.name.value == container.value for param in tree.within(tree.spans[scope], cst.Param)
    ):
        return False
    declarations: list[cst.Global | cst.Nonlocal] = [*tree.within(tree.spans[scope], cst.Global)]
    declarations += tree.within(tree.spans[scope], cst.Nonlocal)
    for declaration in declarations:
        if any(item.name.value == container.value for item in declaration.names):
            return False
    return any(
        isinstance(tree.parents.get(name), cst.AssignTarget)
        for name in tree.within(tree.spans[scope], cst.Name)
        if name.value == container.value
    )


def reads_are_inert(
    tree: SourceTree, container: cst.Name, store: cst.BaseSmallStatement | None
) -> bool:
    """Obligation 3: every read of ``container`` in its function, but the store's own,
    ends in a number, a string or a report — none can feed a backward."""
    scope = tree.function_of(container)
    own = tree.spans[store] if store is not None else tree.spans[container]
    for name in tree.within(tree.spans[scope], cst.Name):
        if name.value != container.value or name is container:
            continue
        if not _inert(tree, name, own):
            return False
    return True


def _is_variable(tree: SourceTree, name: cst.Name) -> bool:
    """``name`` names a variable, not an attribute (``x.losses``) or a keyword (``f(losses=1)``)."""
    parent = tree.parents.get(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    return not (
        isinstance(parent, (cst.Arg, cst.Param)) and getattr(parent, "keyword", None) is name
    )


def _elements_inert(tree: SourceTree, loop: cst.For | cst.CompFor, own) -> bool:
    """``for v in c`` / ``(... for v in c)``: inert when every use of ``v`` is
    (``sum(v.item() for v in losses)``); ``v`` is looked for in its whole function, since
    a loop variable outlives the loop."""
    if not isinstance(loop.target, cst.Name):
        return False
    target = loop.target
    if isinstance(loop, cst.CompFor):
        scope: cst.CSTNode = tree.parents[loop]
        while not isinstance(scope, (cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp)):
            scope = tree.parents[scope]
    else:
        scope = tree.function_of(loop)
    return all(
        _inert(tree, use, own)
        for use in tree.within(tree.spans[scope], cst.Name)
        if use.value == target.value and use is not target
    )


def _inert(tree: SourceTree, name: cst.Name, own) -> bool:
    """The read ``name`` ends in a number, a string or a report before any code could
    backpropagate through it (see obligation 3)."""
    if not _is_variable(tree, name):
        return True
    parent = tree.parents.get(name)
    if isinstance(parent, cst.AssignTarget):
        return True  # a rebinding (``c = []``) reads nothing
    if isinstance(parent, cst.AugAssign) and parent.target is name:
        return own.contains(tree.spans[name])
    if isinstance(parent, (cst.Del, cst.Global, cst.Nonlocal, cst.Param)):
        return True
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is name:
        return _elements_inert(tree, parent, own)
    node: cst.CSTNode = name
    while True:  # climb through what keeps "a value computed from c", without side effects
        parent = tree.parents.get(node)
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return True  # a bool
        if isinstance(parent, cst.FormattedStringExpression):
            return True  # a string
        if isinstance(parent, cst.Expr):
            return True  # computed and thrown away, through pure operations only
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            node = parent
            continue
        if isinstance(parent, cst.Subscript) and parent.value is node:
            node = parent
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = tree.parents.get(parent)
            if not (isinstance(call, cst.Call) and call.func is parent):
                return False  # ``c.data``, ``c.grad``: an alias that keeps what it reads
            if parent.attr.value in NUMBER_METHODS:
                return True
            if parent.attr.value not in TENSOR_METHODS:
                return False  # ``c.backward()``, or a method the fixer does not know
            node = call
            continue
        if isinstance(parent, cst.Arg):
            call = tree.parents.get(parent)
            if not isinstance(call, cst.Call):
                return False
            callee = tree.text(call.func)
            if callee in REPORTING_CALLS:
                return True
            if callee not in PURE_CALLS:
                return False  # unknown code may backpropagate what it receives
            node = call
            continue
        return False  # bound to a name, returned, stored, iterated: it may reach a backward


class RetainedGraphFixer(Fixer):
    code = "TW001"

    def build(self, tree, finding):
        stored, container = stored_expression(tree, finding)
        if stored is None or isinstance(stored, (*LITERALS, cst.Integer, cst.Float)):
            return
        owner = tree.parents.get(stored)
        while owner is not None and not isinstance(owner, (cst.AugAssign, cst.Assign, cst.Expr)):
            owner = tree.parents.get(owner)
        for method, applicability in self._methods(tree, finding, container, owner):
            new = cst.Call(func=cst.Attribute(value=parenthesized(stored), attr=cst.Name(method)))
            rewrite = Rewrite(tree)
            rewrite.replace(
                stored,
                lambda node, m=method: cst.Call(
                    func=cst.Attribute(value=parenthesized(node), attr=cst.Name(m))
                ),
            )
            yield self.fix(
                f"Store `{tree.module.code_for_node(new)}` instead", applicability, rewrite
            )

    @staticmethod
    def _methods(tree, finding, container, owner):
        if Proof.STORED_TENSOR not in finding.proofs:
            return  # a tuple, a namedtuple, a ModelOutput has neither .detach() nor .item()
        if container is not None and _is_number_accumulator(tree, container, owner):
            yield "item", Applicability.UNSAFE
        proven = container_is_private(tree, container) and reads_are_inert(tree, container, owner)
        yield "detach", Applicability.SAFE if proven else Applicability.UNSAFE
