"""TW001 retained-graph: store ``x.detach()`` (safe), or ``x.item()`` when only a number is kept.

The finding's span is the storing statement (``losses.append(loss)``, ``total += loss``)
or the subscript target of ``hist[k] = out``; the stored expression is the appended
argument, the augmented value, or the assigned value. ``.detach()`` keeps a tensor, so
every later use still works: safe. ``.item()`` is offered first when the container is a
number accumulator whose every other use is arithmetic, formatting or printing — then a
float is what the code wanted — but it changes the type (and what ``print`` shows): unsafe.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability, Finding
from .fixer import Fixer
from .tree import Rewrite, SourceTree, parenthesized

STORING_METHODS = {"append": -1, "add": -1, "insert": 1, "appendleft": -1, "put": 0}
NUMERIC_CALLS = {"print", "float", "int", "round", "str", "abs", "format", "max", "min", "len"}
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
            return small.value, small.targets[0].target
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in STORING_METHODS:
                positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
                index = STORING_METHODS[call.func.attr.value]
                if positional and (index == -1 or index < len(positional)):
                    return positional[index].value, call.func.value
    return None, None


def _contains(tree: SourceTree, node: cst.CSTNode, finding: Finding) -> bool:
    from .tree import contains

    return contains(tree.spans[node], finding.span) or contains(finding.span, tree.spans[node])


def _is_number_accumulator(tree: SourceTree, container: cst.BaseExpression, statement) -> bool:
    """``container`` is a plain name bound to a number literal, and every other use of it in
    the function is arithmetic, a comparison, formatting or printing."""
    if not isinstance(container, cst.Name) or not isinstance(statement, cst.AugAssign):
        return False
    scope = tree.function_of(statement)
    bound_to_number = False
    for name in tree.within(tree.spans[scope], cst.Name):
        if name.value != container.value or name is container:
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


class RetainedGraphFixer(Fixer):
    code = "TW001"

    def build(self, tree, finding):
        stored, container = stored_expression(tree, finding)
        if stored is None or isinstance(stored, (*LITERALS, cst.Integer, cst.Float)):
            return
        text = tree.text(stored)
        owner = tree.parents.get(stored)
        while owner is not None and not isinstance(owner, (cst.AugAssign, cst.Assign, cst.Expr)):
            owner = tree.parents.get(owner)
        for method, applicability in self._methods(tree, container, owner):
            rewrite = Rewrite(tree)
            rewrite.replace(
                stored,
                lambda node, m=method: cst.Call(
                    func=cst.Attribute(value=parenthesized(node), attr=cst.Name(m))
                ),
            )
            yield self.fix(f"Store `{text}.{method}()` instead", applicability, rewrite)

    @staticmethod
    def _methods(tree, container, owner):
        if container is not None and _is_number_accumulator(tree, container, owner):
            yield "item", Applicability.UNSAFE
        yield "detach", Applicability.SAFE
