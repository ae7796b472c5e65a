"""The code changes that apply a chosen plan's remedies to the script it was planned for.

A plan (docs/plan.md) is a set of :class:`~torchward.estimator.runconfig.RunConfig` field
changes. Some of them are one keyword or one statement in the script, and those are offered
as code actions once the plan is chosen (:mod:`.plan`):

| plan change | where the script says it | the change |
|---|---|---|
| ``checkpointing`` | a ``TrainingArguments`` / TRL config call | ``gradient_checkpointing=True`` |
| ``checkpointing`` | ``model = X.from_pretrained(...)`` | ``model.gradient_checkpointing_enable()`` after it |
| ``dtype`` (mixed precision) | a ``TrainingArguments`` call | ``bf16=True`` or ``fp16=True`` |
| ``optimizer`` (8-bit AdamW) | a ``TrainingArguments`` call | ``optim="adamw_bnb_8bit"`` |
| ``optimizer`` (8-bit AdamW) | ``torch.optim.AdamW(...)`` | ``bitsandbytes.optim.AdamW8bit(...)`` |
| ``batch_size`` + ``accumulation`` | a ``TrainingArguments`` call | ``per_device_train_batch_size``, ``gradient_accumulation_steps`` |
| ``eval_batch_size`` | a ``TrainingArguments`` call | ``per_device_eval_batch_size`` |

Everything else a plan sets (GPU count, sharding, offload, tensor parallelism, LoRA /
QLoRA) is the launch or a rewrite of the model's set-up, not one change in place: the
command names it and offers no edit. A change is offered only where the plan's value
differs from the job as the estimator read it, and only when it changes the text (applied
once, it is no longer offered).

The edits are built from the document's current text with LibCST and shipped as the
smallest edits between the two texts (:func:`torchward.analysis.fixes.edits.edits_between`),
as the fixes of findings are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import libcst as cst
from torchward.analysis import Edit
from torchward.analysis.fixes.edits import edits_between
from torchward.analysis.job.runconfig_fields import HF_ARGUMENTS

__all__ = ["RemedyEdit", "remedy_edits"]

_HF_PRECISION = {"amp-bf16": ("bf16", "fp16"), "amp-fp16": ("fp16", "bf16")}
_UNSAID = {"accumulation": 1, "checkpointing": False}
"""What a script that does not say a field runs with (no accumulation, no checkpointing)."""
_TORCH_ADAMW = ("torch.optim.AdamW", "optim.AdamW", "AdamW")


@attrs.frozen
class RemedyEdit:
    """One remedy of the plan as a change of the script: its title and its edits."""

    title: str
    edits: tuple[Edit, ...]


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


def _callee(call: cst.Call) -> str:
    return _dotted(call.func).rsplit(".", 1)[-1]


class _SetKeywords(cst.CSTTransformer):
    """Sets ``keywords`` (name → source of the value) on every call of ``callees``."""

    def __init__(self, callees: tuple[str, ...], keywords: Mapping[str, str]) -> None:
        super().__init__()
        self.callees = callees
        self.keywords = keywords
        self.matched = False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if _callee(updated) not in self.callees:
            return updated
        self.matched = True
        if any(arg.star == "**" for arg in updated.args):
            return updated  # a keyword may come from the unpacked dict: not ours to repeat
        args = list(updated.args)
        for name, code in self.keywords.items():
            value = cst.parse_expression(code)
            at = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == name), -1)
            if at >= 0:
                args[at] = args[at].with_changes(value=value)
                continue
            new = cst.Arg(
                keyword=cst.Name(name),
                value=value,
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
            if args and isinstance(args[-1].comma, cst.Comma):
                # one argument a line with a trailing comma: the new one takes the last
                # line's comma (before the ``)``), the last takes its neighbour's
                between = args[-2].comma if len(args) > 1 else args[-1].comma
                new = new.with_changes(comma=args[-1].comma)
                args[-1] = args[-1].with_changes(comma=between)
            args.append(new)
        return updated.with_changes(args=tuple(args))


class _RenameCall(cst.CSTTransformer):
    """Replaces the callee of calls named ``old`` (dotted as written) with ``new``."""

    def __init__(self, old: tuple[str, ...], new: str) -> None:
        super().__init__()
        self.old, self.new = old, new
        self.renamed = False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if _dotted(updated.func) not in self.old:
            return updated
        self.renamed = True
        return updated.with_changes(func=cst.parse_expression(self.new))


Rewrite = Callable[[cst.Module], "cst.Module | None"]
"""The script with one remedy applied; ``None`` when the script has no place for it."""


def _enable_checkpointing(module: cst.Module) -> cst.Module | None:
    """``NAME.gradient_checkpointing_enable()`` after each top-level or function-level
    statement ``NAME = X.from_pretrained(...)`` (chained ``.cuda()`` / ``.to()`` allowed)."""

    class Insert(cst.CSTTransformer):
        def _loaded(self, statement: cst.BaseStatement) -> str | None:
            if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
                return None
            assign = statement.body[0]
            if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
                return None
            target = assign.targets[0].target
            value = assign.value
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                if value.func.attr.value == "from_pretrained":
                    return target.value if isinstance(target, cst.Name) else None
                value = value.func.value
            return None

        found = False

        def _insert(self, body: tuple) -> tuple:
            out: list = []
            for index, statement in enumerate(body):
                out.append(statement)
                name = self._loaded(statement)
                if name is None:
                    continue
                self.found = True
                call = f"{name}.gradient_checkpointing_enable()"
                following = body[index + 1] if index + 1 < len(body) else None
                if following is not None and cst.Module([following]).code.strip() == call:
                    continue
                out.append(cst.parse_statement(call))
            return tuple(out)

        def leave_IndentedBlock(self, original, updated):
            return updated.with_changes(body=self._insert(updated.body))

        def leave_Module(self, original, updated):
            return updated.with_changes(body=self._insert(updated.body))

    insert = Insert()
    changed = module.visit(insert)
    return changed if insert.found else None


def _adamw_8bit(module: cst.Module) -> cst.Module | None:
    """``torch.optim.AdamW(...)`` → ``bitsandbytes.optim.AdamW8bit(...)``, importing it."""
    rename = _RenameCall(_TORCH_ADAMW, "bitsandbytes.optim.AdamW8bit")
    changed = module.visit(rename)
    if not rename.renamed:
        return None
    has_import = any("import bitsandbytes" in cst.Module([s]).code for s in changed.body[:40])
    if has_import:
        return changed
    body = list(changed.body)
    at = 0
    for index, statement in enumerate(body):  # after the imports at the top
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(
            statement.body[0], (cst.Import, cst.ImportFrom)
        ):
            at = index + 1
        elif index > at:
            break
    body.insert(at, cst.parse_statement("import bitsandbytes\n"))
    return changed.with_changes(body=tuple(body))


def _hf(keywords: Mapping[str, str]) -> Rewrite:
    """Set ``keywords`` on the script's ``TrainingArguments`` (or TRL config) calls."""

    def run(module: cst.Module) -> cst.Module | None:
        setter = _SetKeywords(HF_ARGUMENTS, keywords)
        changed = module.visit(setter)
        return changed if setter.matched else None

    return run


def _chain(*steps: Rewrite) -> Rewrite:
    """The first of ``steps`` that has a place in the script (applied or not yet)."""

    def run(module: cst.Module) -> cst.Module | None:
        return next((c for step in steps if (c := step(module)) is not None), None)

    return run


def _rewrites(changes: Mapping[str, Any], read: Mapping[str, Any]) -> list[tuple[str, Rewrite]]:
    """(title, rewrite) for each plan change that one change of the script applies."""

    def differs(field: str) -> bool:
        return field in changes and changes[field] != read.get(field, _UNSAID.get(field))

    found: list[tuple[str, Rewrite]] = []
    if differs("dtype") and changes["dtype"] in _HF_PRECISION:
        on, off = _HF_PRECISION[changes["dtype"]]
        found.append((f"mixed precision ({changes['dtype']})", _hf({on: "True", off: "False"})))
    if differs("checkpointing") and changes["checkpointing"] is True:
        found.append(
            (
                "gradient checkpointing",
                _chain(_hf({"gradient_checkpointing": "True"}), _enable_checkpointing),
            )
        )
    if differs("optimizer") and changes["optimizer"] == "adamw-8bit":
        found.append(("8-bit AdamW", _chain(_hf({"optim": '"adamw_bnb_8bit"'}), _adamw_8bit)))
    if differs("batch_size") or differs("accumulation"):
        micro, steps = changes.get("batch_size"), changes.get("accumulation")
        keywords = {}
        if differs("batch_size"):
            keywords["per_device_train_batch_size"] = str(int(changes["batch_size"]))
        if differs("accumulation"):
            keywords["gradient_accumulation_steps"] = str(int(changes["accumulation"]))
        found.append((f"micro-batch {micro} × accumulation {steps}", _hf(keywords)))
    if differs("eval_batch_size"):
        size = str(int(changes["eval_batch_size"]))
        found.append((f"evaluation batch {size}", _hf({"per_device_eval_batch_size": size})))
    return found


def remedy_edits(
    source: str, changes: Mapping[str, Any], read: Mapping[str, Any]
) -> list[RemedyEdit]:
    """The plan's ``changes`` that a change of ``source`` applies, each with its edits.

    ``read`` is the job as the estimator read it (field → value): a change to the value the
    script already has is no remedy. Empty when the source does not parse."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return []
    found = []
    for title, rewrite in _rewrites(changes, read):
        changed = rewrite(module)
        edits = edits_between(source, changed.code) if changed is not None else ()
        if edits:
            found.append(RemedyEdit(title, edits))
    return found
