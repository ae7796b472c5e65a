"""Read a script's run configuration from its source, for the VRAM estimator.

The script is parsed with ``ast`` and never imported or run. Calls are recognised by
qualified name through :class:`~.names.ImportTable` (``transformers.TrainingArguments``,
``torch.optim.AdamW``), falling back to the call's last name for methods on values
(``.from_pretrained``, ``.generate``, ``.gradient_checkpointing_enable``). Values are
followed to where real scripts keep them: literals (high confidence), module constants
and ``argparse`` defaults (medium: the command line can override them), and keys of a
JSON (or, when PyYAML is installed, YAML) config file the script names (medium).

Every field carries ``path:line``. The fields found go into an
:class:`~torchward.estimator.runconfig.RunConfig`; what was not found stays ``None``, so
the estimator names it as missing instead of guessing.

Values and path conditions are the analysis engine's: its launch, asked on demand for
the nodes the reader reads (:mod:`.launch_demand`), folds with the same code and joins by
the same rules as the dataflow in launch mode; the reader evaluates nothing itself.

The reader in modules, one concept each: what the script declares
(:mod:`.runconfig_declarations`), the engine's values in the reader's spelling
(:mod:`.runconfig_values`), which path a node is on (:mod:`.runconfig_paths`), files it
executes (:mod:`.runconfig_includes`), what each call says (:mod:`.runconfig_calls`) and
the model it builds itself (:mod:`.runconfig_model`). How this came to be:
``docs/design/analysis.md``.
"""

from __future__ import annotations

import ast
import os
import re

from torchward.estimator.runconfig import RunConfig

from ..syntax.names import ImportTable, dotted, qualified_name
from ..syntax.parsing import parse_module
from .runconfig_callees import precision_in_callees
from .runconfig_calls import CallReader
from .runconfig_declarations import Values
from .runconfig_fields import ReaderState
from .runconfig_jobs import other_jobs
from .runconfig_layers import bare_layer_model
from .runconfig_memo import remembered_read
from .runconfig_model import model_by_name, registered_model_call, workspace_model
from .runconfig_optimizers import optimizer_in_callees

__all__ = ["Values", "read_script", "read_source"]

_EVAL_NAME = re.compile(r"(^|_)(val|valid|validation|eval|test|sample)(_|$|loader|set|data)", re.I)


def _assigned_name(node: ast.AST, values: Values) -> str:
    """The name the statement holding ``node`` assigns (``val_loader = DataLoader(...)``)."""
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = values.paths.parent(current)
    if isinstance(current, (ast.Assign, ast.AnnAssign)):
        targets = current.targets if isinstance(current, ast.Assign) else [current.target]
        return " ".join(ast.unparse(t) for t in targets)
    return ""


def _call_name(
    call: ast.Call, imports: ImportTable, values: Values, chosen: dict[str, str | None]
) -> str:
    """Qualified name, else dotted path, else the method name of a call on a call's result.

    A class chosen into a variable first (``optimizer_class = torch.optim.AdamW`` on the
    default branch, then ``optimizer_class(params)``) is called by that class's name
    (``chosen``: each variable's, looked up once — per call it was quadratic in a script
    that assigns ``model`` in every block)."""
    name = qualified_name(call.func, imports) or dotted(call.func)
    if isinstance(call.func, ast.Name) and name == call.func.id:
        if name not in chosen:
            chosen[name] = _chosen_class(name, imports, values)
        found = chosen[name]
        if found:
            return found
    if name:
        return name
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def _chosen_class(variable: str, imports: ImportTable, values: Values) -> str | None:
    """The class the last assignment of a class (not a call) to ``variable`` on the
    default path names, if any."""
    for value, stmt in reversed(values.assignments.get(variable, [])):
        if isinstance(value, (ast.Attribute, ast.Name)) and values.paths.state(stmt) == "default":
            found = qualified_name(value, imports) or dotted(value)
            if found:
                return found
    return None


_ALTERNATIVES = (  # a call's last name -> what it would change, and the setting that sizes it
    ("autocast", "mixed precision", "--dtype amp-bf16 / amp-fp16"),
    ("gradient_checkpointing_enable", "gradient checkpointing", "--checkpointing"),
    ("half", "16-bit weights", "--dtype fp16"),
    ("bfloat16", "16-bit weights", "--dtype bf16"),
)


def _alternatives(skipped: list, values: Values, path: str) -> list[str]:
    """Notes for what the job would do under a flag its default leaves off (``if
    args.bf16:`` around an autocast): not in the estimate, but the alternative a launch
    with that flag runs — named, with the setting that sizes it, once per kind."""
    found: dict[str, str] = {}
    for node, state in skipped:
        if state != "off" or not isinstance(node, ast.Call):
            continue
        func = node.func
        tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        for name, what, setting in _ALTERNATIVES:
            if tail == name and what not in found:
                found[what] = (
                    f"{path}:{node.lineno}: {what} (`{ast.unparse(node)[:50]}`) runs only "
                    f"with a flag the defaults leave off: not in this estimate (an "
                    f"alternative; {setting} sizes it)"
                )
    return list(found.values())


def _stop_note(stop: ast.Raise | ast.Return, values: Values, path: str) -> str:
    """What a ``raise`` / early ``return`` on a plain launch's path means for the read."""
    function = values.paths.enclosing_function(stop)
    if isinstance(stop, ast.Raise) or function is None:  # the launch ends there
        stops = "raises here, so what follows"
    else:
        stops = f"returns from `{function.name}` here, so the rest of `{function.name}`"
    return (
        f"{path}:{stop.lineno}: a plain launch {stops} runs only with flags the defaults "
        "leave unset: what is read there is not high confidence"
    )


def read_source(
    source: str,
    path: str = "<script>",
    argv: tuple[str, ...] = (),
    tree: ast.Module | None = None,
) -> tuple[RunConfig, list[str]]:
    """The run configuration ``source`` describes, and notes about what could not be read.

    ``argv``: the arguments the script is launched with (none: a plain ``python SCRIPT``);
    a configurator the script executes applies them (:mod:`.runconfig_includes`).
    ``tree``: ``source`` already parsed (the linter's tree, the CLI's check): not again —
    a parse is a third of a read. It is only read, never changed. A read is remembered
    until an edit touches what the job depends on (:mod:`.runconfig_memo`)."""
    if tree is None:
        try:
            tree = parse_module(source, path)
        except SyntaxError as error:
            return RunConfig(), [f"{path}: not parsed ({error.msg})"]
    return remembered_read(source, path, argv, tree, _read)


def _read(
    source: str, path: str, argv: tuple[str, ...], tree: ast.Module
) -> tuple[RunConfig, list[str]]:
    """One read of the job (:func:`read_source`; :mod:`.runconfig_memo` decides when):
    the calls on the training path, then — when the script runs another job beside the
    model read (:mod:`.runconfig_jobs`) — again without that other job's functions."""
    notes: list[str] = []
    values = Values(tree, path, notes, source, argv)
    shown = os.path.basename(path) if path.startswith("<") else path
    reader, job_notes = _read_job(tree, path, values, shown, frozenset())
    model = reader.state.fields.get("model")
    others = other_jobs(tree, shown, model.source if model is not None else None, values.paths)
    if others:
        reader, job_notes = _read_job(tree, path, values, shown, others)
    config = reader.config()
    return config, notes + job_notes + reader.state.notes


def _read_job(
    tree: ast.Module, path: str, values: Values, shown: str, others: frozenset[int]
) -> tuple[CallReader, list[str]]:
    """The reader after the script's calls, leaving out those in ``others`` (node ids of
    another job's functions), and the notes of that read."""
    notes: list[str] = []
    state = ReaderState(ImportTable(tree), values, shown)
    reader = CallReader(state)
    calls = [c for c in values.paths.of_type(ast.Call) if id(c) not in others]
    for subscript in values.paths.of_type(ast.Subscript):
        if id(subscript) in others:
            continue
        if (
            (dotted(subscript.value) or "").endswith("environ")
            and isinstance(subscript.slice, ast.Constant)
            and subscript.slice.value == "WORLD_SIZE"
        ):
            if values.paths.state(subscript).runs:  # os.environ["WORLD_SIZE"] on the default path
                state.signals.setdefault("world-size-env", subscript.lineno)
            else:
                state.skipped.append((subscript, values.paths.state(subscript)))
        else:
            model_by_name(subscript, values, state)
    calls.sort(key=lambda c: (c.lineno, c.col_offset))
    chosen: dict[str, str | None] = {}  # a variable -> the class chosen into it
    for node in calls:
        path_state = values.paths.state(node)
        if not path_state.runs:
            state.skipped.append((node, path_state))
            continue
        target = _assigned_name(node, values)
        state.target = target
        state.path_cap = path_state.confidence_cap
        state.cap = "low" if _EVAL_NAME.search(target) else path_state.confidence_cap
        reader.call(node, _call_name(node, state.imports, values, chosen))
    state.cap = "high"
    notes.extend(_alternatives(state.skipped, values, path))
    for stop in values.paths.early_stops():
        notes.append(_stop_note(stop, values, path))
    reader.conventions(values)
    reader.families.cache_config(values)
    reader.families.hand_padding(values)
    precision_in_callees(tree, path, values, state)  # what the script's own flags leave open
    optimizer_in_callees(tree, path, values, state)
    if "model" in state.fields and registered_model_call(tree, path, values, state):
        del state.fields["model"]  # ``create_model(args.arch)`` builds a project class
    if "model" not in state.fields:
        try:
            workspace_model(tree, path, values, state, notes)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as error:
            # a layer's arguments the counter cannot take (``nn.Linear(dim, None)``): the
            # model stays unnamed, so the estimate says "unknown" instead of crashing
            notes.append(f"{path}: the model it defines could not be counted ({error!r})")
    if "model" not in state.fields:
        try:
            bare_layer_model(tree, path, values, state, notes)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as error:
            notes.append(f"{path}: the layer it trains could not be counted ({error!r})")
    if "model" not in state.fields:
        notes.extend(_model_left_to_launch(state.unread_models, path))
    return reader, notes


def _model_left_to_launch(loads: list[tuple[int, str]], path: str) -> list[str]:
    """Where the model would come from when the script loads it by a name it never sets
    (``from_pretrained(args.model_name_or_path)`` of a required flag): say so, and which
    flag, instead of only that no model was found."""
    notes = []
    for line, expression in loads[:1]:  # the first load: the model the job trains
        leaf = expression.rsplit(".", 1)[-1]
        flag = f" (likely `--{leaf}` at launch)" if "." in expression else ""
        notes.append(
            f"{path}:{line}: the model is loaded from `{expression}`, which holds no value "
            f"the reader can follow on a plain launch{flag}: give --model ID"
        )
    return notes


def read_script(path: str, argv: tuple[str, ...] = ()) -> tuple[RunConfig, list[str]]:
    """Read the file at ``path`` (raises ``OSError`` when it cannot be read)."""
    with open(path, encoding="utf-8-sig") as handle:
        return read_source(handle.read(), path, argv)
