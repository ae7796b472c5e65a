"""TW003 missing-zero-grad: insert ``optimizer.zero_grad(set_to_none=True)`` after the step.

The finding's span is the optimizer step (``opt.step()``, ``self.opt.step()``, or a
scaler's ``scaler.step(opt)``: a receiver bound to a constructor that the library-effects
table says builds a scaler, whose ``step`` entry names the argument that is stepped). The reset goes on the line after the statement
that steps, at its indentation, written with the optimizer's own expression. After the
step rather than at the top of the loop: when the step sits inside an accumulation
``if``, a reset at the top of the loop would throw the accumulated gradients away, while
a reset after the step is right in both shapes. When the loop only steps through a
helper (``train_step(model, x, opt)``), there is no statement to anchor to: no fix.

The reset changes the next update by removing the stale gradients — the fix. It is
**safe** only when it changes nothing else:

1. *It is a torch optimizer.* The analysis proved the stepped object was built by a
   ``torch.optim`` constructor (:attr:`~torchward.analysis.finding.Proof.TORCH_OPTIMIZER`),
   not guessed from a name: a wrapper of another library may lack
   ``zero_grad(set_to_none=...)``.
2. *Writing the optimizer again is harmless.* Its expression is a name or a chain of
   attributes (``opt``, ``self.optimizer``): evaluating it twice has no side effect.
3. *Nobody reads the gradients the reset removes.* Nothing in the function reads
   ``.grad``: ``set_to_none=True`` leaves ``p.grad`` ``None`` until the next backward,
   so a gradient-norm log or a hand-written update would change or raise.
4. *The accumulation is not deliberate.* The loop calls no
   ``backward(retain_graph=True)`` (a gradient-comparison harness), and the step takes no
   closure (``LBFGS``'s closure resets gradients itself).

Otherwise the reset is offered as **unsafe**.
"""

from __future__ import annotations

import functools

import libcst as cst
import libcst.matchers as m

from ..adapters.effects import current
from ..finding import Applicability, Proof
from ..names import ImportTable, qualified_path
from ..parsing import parse_module
from ..values import Kind
from .fixer import Fixer
from .tree import Rewrite, SourceTree, statement_line


def optimizer_of(tree, call: cst.Call) -> cst.BaseExpression | None:
    """The optimizer a ``.step(...)`` call steps: its receiver, or the argument the
    library-effects table names for a scaler's ``step`` (``scaler.step(opt)``)."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"):
        return None
    receiver = call.func.value
    if not _is_scaler(tree, receiver):
        return receiver
    entry = current().method("scaler", "step")
    for effect in entry.effects if entry is not None else ():
        if effect.effect == "step" and (effect.argument is not None or effect.keyword):
            return _argument(call, effect.argument, effect.keyword)
    return None


def _argument(call: cst.Call, position: int | None, keyword: str | None):
    """The expression passed at ``position`` or as ``keyword`` (None behind a ``*args``)."""
    for arg in call.args:
        if keyword is not None and arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = []
    for arg in call.args:
        if arg.star:
            break
        if arg.keyword is None:
            positional.append(arg.value)
    if position is not None and position < len(positional):
        return positional[position]
    return None


def _is_scaler(tree, receiver: cst.BaseExpression) -> bool:
    """Bound in this file to a call the library-effects table says builds a scaler
    (``scaler = amp.GradScaler()``, under any import spelling)."""
    text = tree.text(receiver)
    imports = _imports(tree.source)
    for assign in tree.within(tree.spans[tree.module], cst.Assign):
        if any(tree.text(target.target) == text for target in assign.targets):
            value = assign.value
            name = (
                qualified_path(tree.text(value.func), imports)
                if isinstance(value, cst.Call)
                else None
            )
            if name is not None and current().constructed_kind(name) is Kind.SCALER:
                return True
    return False


@functools.lru_cache(maxsize=8)
def _imports(source: str) -> ImportTable:
    return ImportTable(parse_module(source))


def is_plain_reference(node: cst.BaseExpression) -> bool:
    """Obligation 2: ``name`` or ``name.attr.attr``, nothing evaluated on the way."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def reads_gradients(tree: SourceTree, anchor: cst.CSTNode) -> bool:
    """Obligation 3 fails: ``.grad`` is read somewhere in the function of ``anchor``."""
    scope = tree.function_of(anchor)
    return any(
        attribute.attr.value == "grad"
        for attribute in tree.within(tree.spans[scope], cst.Attribute)
    )


class MissingZeroGradFixer(Fixer):
    code = "TW003"

    def build(self, tree, finding):
        call = tree.at(finding.span, cst.Call)
        optimizer = optimizer_of(tree, call) if call is not None else None
        statement = tree.statement(call) if call is not None else None
        if optimizer is None or not isinstance(statement, cst.SimpleStatementLine):
            return
        if not is_plain_reference(optimizer):
            return  # ``make_opt().step()``: writing it again would build another optimizer
        name = tree.text(optimizer)
        reset = f"{name}.zero_grad(set_to_none=True)"
        rewrite = Rewrite(tree)
        rewrite.insert_after(statement, statement_line(reset))
        loops = tree.loops_around(finding.span)
        harness = bool(loops) and any(
            m.matches(arg, m.Arg(keyword=m.Name("retain_graph"), value=m.Name("True")))
            for arg in tree.within(tree.spans[loops[0]], cst.Arg)
        )
        closure = optimizer is call.func.value and bool(call.args)
        proven = (
            Proof.TORCH_OPTIMIZER in finding.proofs
            and not harness
            and not closure
            and not reads_gradients(tree, call)
        )
        yield self.fix(
            f"Insert `{reset}` after the step",
            Applicability.SAFE if proven else Applicability.UNSAFE,
            rewrite,
        )
