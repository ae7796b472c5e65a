"""The model a script trains when no call names it: a project's own ``nn.Module``.

Runs after the calls are read (:mod:`.runconfig_calls`), only when none of them named a
model: ``models.__dict__[args.arch]`` selects a torchvision builder by a default name; a
class of the script or the project (found through the workspace index, including
registries and ``create_model(name)`` factories) is counted from its layer constructors,
traced as a CNN, or — for a GPT-style decoder built from a config — given the config's
shape, so the cost model can give it activations (approximate, and said so).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from torchward.estimator import dependencies

from ..syntax.names import dotted, qualified_name
from .modulecount import UNTRACED, Built, ModuleCount, ModuleCounter, module_constants
from .moduletrace import trace_cnn, traced_params
from .runconfig_configclass import setting_read
from .runconfig_declarations import Values
from .runconfig_fields import ReaderState

__all__ = ["bound_module_name", "model_by_name", "registered_model_call", "workspace_model"]

_NOT_MODEL_NAMES = ("scratch", "resume", "none", "", "auto")


def model_by_name(node: ast.Subscript, values: Values, reader: ReaderState) -> None:
    """``models.__dict__[args.arch]`` / ``torchvision_models.__dict__[name]``: the
    torchvision builder the default name selects."""
    if not (isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__"):
        return
    module = qualified_name(node.value.value, reader.imports) or ""
    if not module.startswith("torchvision.models"):
        return
    state = values.paths.state(node)
    if not state.runs:
        return
    found = values.get(node.slice)
    if found and isinstance(found[0], str) and found[0].lower() not in _NOT_MODEL_NAMES:
        reader.cap = state.confidence_cap
        reader.set("model", found[0], node.lineno, found[1])
        reader.cap = "high"


_LOADS = re.compile(r"(?i)load.*(weight|state_dict|checkpoint|pretrained)|from_pretrained")


def _loads_weights(values: Values) -> bool:
    """Whether the default path loads trained weights (``load_state_dict``,
    ``load_weights_into_gpt``, ``GPT.from_pretrained``)."""
    for node in values.paths.of_type(ast.Call):
        name = (dotted(node.func) or "").rsplit(".", 1)[-1]
        if _LOADS.search(name) and values.paths.state(node) == "default":
            return True
    return False


def _inside_module_class(node: ast.AST, values: Values, counter: ModuleCounter) -> bool:
    current = values.paths.parent(node)
    while current is not None:
        if isinstance(current, ast.ClassDef) and current.name in counter.modules:
            return True
        current = values.paths.parent(current)
    return False


def registered_model_call(tree: ast.Module, path: str, values: Values, reader: ReaderState) -> bool:
    """Whether the model name read so far came from a call that builds a class of the
    project by key (a decorator registry's ``create_model(args.arch)``, not a hub id)."""
    from ..workspace.models import indirect_models

    source = reader.fields["model"].source
    calls = [n for n in values.paths.of_type(ast.Call) if source == f"{reader.path}:{n.lineno}"]
    return bool(calls) and bool(
        indirect_models(tree, path, calls, lambda n: (values.get(n) or (None,))[0])
    )


def _models_by_key(
    tree: ast.Module, path: str, values: Values, counter: ModuleCounter
) -> dict[int, str]:
    """Calls that build a project model class not named at the call (``models.Net(...)``,
    ``MODELS[args.arch](...)``, ``create_model(args.model)`` over a decorator registry,
    ``models.__dict__[args.arch](...)``): by call, the class name ``counter`` counts it by
    (:func:`torchward.analysis.workspace.models.indirect_models`)."""
    from ..workspace.models import indirect_models

    calls = values.paths.of_type(ast.Call)
    found: dict[int, str] = {}
    for call, model in indirect_models(tree, path, calls, lambda n: (values.get(n) or (None,))[0]):
        if isinstance(model, str):
            found[id(call)] = model
        else:
            counter.adopt(model.name, model.module.tree, model.module.path, model.name)
            found[id(call)] = model.name
    return found


def workspace_model(
    tree: ast.Module, path: str, values: Values, reader: ReaderState, notes: list[str]
) -> None:
    """The script trains its own ``nn.Module``: count it from its layer constructors.

    Among the instantiations of local module classes outside their own bodies, the one
    with the most parameters is the model. Its arguments are followed like every other
    value (literals, constants, argparse defaults); layers that cannot be sized are named
    in a note, and lower the confidence, instead of being guessed.
    """
    called = {  # classes (by convention capitalised) the script instantiates
        n.func.id
        for n in values.paths.of_type(ast.Call)
        if isinstance(n.func, ast.Name) and n.func.id[:1].isupper()
    }
    constants = module_constants(tree)
    launched = _launch_globals(tree, values, constants)
    counter = ModuleCounter(tree, path, {**constants, **launched}, wanted=called)
    _adopt_imported_in_functions(path, values, counter, called)
    chosen = _models_by_key(tree, path, values, counter)
    if not counter.modules:
        return
    best: tuple[int, ast.Call, ModuleCount, str] | None = None
    best_args: tuple[list, dict] = ([], {})
    best_name = ""
    candidates = [
        (node, name)
        for node in values.paths.of_type(ast.Call)
        if (
            name := chosen.get(id(node))
            or (node.func.id if isinstance(node.func, ast.Name) else None)
        )
        in counter.modules
        and not _inside_module_class(node, values, counter)  # a layer of another module
    ]
    # modules the script builds and hands to another's constructor (``Seq2Seq(encoder,
    # decoder)``): counted first, by the name they are bound to, then passed in as built
    built: dict[str | int, Built] = {}  # by the name bound to it, and by its call's id
    # innermost first (a call nested in another's arguments starts after it): a module
    # built right in an argument list holds the modules built in its own (``Stack(Layer(
    # attn=Attention(...)), n)``), at any depth
    by_call: dict[str | int, Built] = {}
    for node, name in sorted(
        candidates, key=lambda c: (c[0].lineno, c[0].col_offset), reverse=True
    ):
        alone = Built(counter.count_class(name, *_arguments(node, values, by_call)[:2]))
        by_call[id(node)] = alone
        built[id(node)] = alone  # ``Wrapper(Encoder(...), Decoder(...))``
        target = _bound_name(node, values)
        if target is not None:
            built[target] = alone
    counted = []
    for node, name in candidates:
        args, kwargs, confidence = _arguments(node, values, built)
        composed = any(isinstance(v, Built) for v in (*args, *kwargs.values()))
        # counted once already, unless it is handed modules the script built
        count = counter.count_class(name, args, kwargs) if composed else built[id(node)].count
        counted.append((node, name, args, kwargs, confidence, count))
    # a module handed to a constructor that keeps it where the counter cannot follow
    # (``clones(layer, N)`` of another library) is part of a model whose size is not
    # known: never the model itself (a wrapper counted in full holds it anyway) — nor is
    # a module handed to one of those, at any depth (``Model(n, XL(Layer(ff=FF(...))))``
    # with the vocabulary unknown: the feed-forward is no more the model than the layer)
    inside_an_unknown: set[int] = set()
    while True:
        grown = {
            id(built[key])
            for node, _, _, _, _, count in counted
            if count.unknown or id(built[id(node)]) in inside_an_unknown
            for arg in (*node.args, *(k.value for k in node.keywords))
            if (key := arg.id if isinstance(arg, ast.Name) else id(arg)) in built
        }
        if grown <= inside_an_unknown:
            break
        inside_an_unknown |= grown
    for node, name, args, kwargs, confidence, count in counted:
        if id(built[id(node)]) in inside_an_unknown:
            continue
        if best is None or count.params > best[0]:
            best = (count.params, node, count, confidence)
            best_args = (args, kwargs)
            best_name = name
    if best is not None and best[0] == 0 and best[2].unknown:
        shown = ", ".join(dict.fromkeys(best[2].unknown))
        notes.append(f"{best_name}: no parameter counted; not sized: {shown[:300]}")
    if best is None or best[0] == 0:
        return
    params, node, count, confidence = best
    name = best_name
    owner = counter.classes[name][1]
    if owner is counter and _reads_any(counter.classes[name][0], launched):
        confidence = "medium" if confidence == "high" else confidence  # a launch can override
    structure = _decoder_structure(node, values, tree if owner is counter else owner.path, name)
    if structure is None:
        layers = trace_cnn(counter, name, best_args[0], best_args[1])
        if layers is not None and traced_params(layers) > params:
            # the trace followed what the counter could not (self._make_layer(...) blocks)
            params, count, confidence = (
                traced_params(layers),
                ModuleCount(traced_params(layers)),
                "medium",
            )
        if layers is not None:
            first = next((layer for layer in layers if layer[0] == "conv"), None)
            structure = {
                "model_type": "script-cnn",
                "params": params,
                "in_channels": first[1] if first else 3,
                "layers": layers,
            }
    if count.unknown:
        confidence = "low"
        shown = ", ".join(dict.fromkeys(count.unknown))
        notes.append(f"{name}: {params:,} parameters counted; not sized: {shown[:300]}")
    partners = [
        (other_name, other_count)
        for other, other_name, _, _, _, other_count in counted
        if other is not node
        and id(built[id(other)]) not in inside_an_unknown
        and _trained_together(node, other, values, reader)
    ]
    layers_of = f"{name}'s layers"
    beside = _other_networks(node, name, counted, {n for n, _ in partners}, values)
    if beside:  # maybe trained too, maybe not: the count may be the job's or a part of it
        confidence = "low"
        shown = ", ".join(
            f"{n} ({c:,} parameters)" if c else f"{n} (its size not read)"
            for n, c in beside.items()
        )
        notes.append(
            f"{reader.path}:{node.lineno}: the script also builds {shown}, and whether the "
            f"job trains it beside {name} is not read: {name}'s count may be a part of the job"
        )
    if partners:  # each trained by its own optimizer: the job holds both (a GAN)
        params += sum(c.params for _, c in partners)
        others = " and ".join(dict.fromkeys(n for n, _ in partners))
        layers_of = f"{name}'s and {others}'s layers"
        for other_name, other_count in partners:
            if other_count.unknown:
                confidence = "low"
                shown = ", ".join(dict.fromkeys(other_count.unknown))
                notes.append(f"{other_name}: not sized: {shown[:300]}")
        if structure is not None and structure["model_type"] == "script-cnn":
            structure = None  # the walk is one network's; the others' activations are not
        notes.append(
            f"{reader.path}:{node.lineno}: the optimizers also train {others}: its parameters, "
            f"gradients and optimizer state are counted with {name}'s ({params:,} in all)"
        )
    reader.set("model", name, node.lineno, confidence)
    if not _loads_weights(values):  # built from its own layers, nothing loaded into it
        reader.set("pretrained", False, node.lineno, "medium")
    if structure is not None:
        reader.set(
            "structure",
            structure,
            node.lineno,
            "medium",
            f"{reader.path}:{node.lineno} ({name}'s "
            + (
                "config, a GPT-style decoder)"
                if structure["model_type"] == "gpt2"
                else "layers in construction order, a CNN)"
            ),
        )
    reader.set(
        "params", params, node.lineno, confidence, f"{reader.path}:{node.lineno} ({layers_of})"
    )


def _adopt_imported_in_functions(
    path: str, values: Values, counter: ModuleCounter, called: set[str]
) -> None:
    """Module classes a function of the script imports where it builds the model
    (``def _model(c): from models import Net; return Net(...)``), which the module-level
    imports the counter adopts do not name: those imports, resolved as if at the top
    (re-exports followed, like every import of the project)."""
    from ..workspace.models import project_classes

    inside = [
        node
        for node in values.paths.of_type(ast.ImportFrom)
        if values.paths.enclosing_function(node) is not None
    ]
    wanted = called - set(counter.classes)
    if not inside or not wanted:
        return
    hoisted = ast.Module(body=list(inside), type_ignores=[])
    for local, found in project_classes(hoisted, path, wanted).items():
        counter.adopt(local, found.module.tree, found.module.path, found.name)


def _other_networks(
    node: ast.Call, name: str, counted: list, partners: set[str], values: Values
) -> dict[str, int]:
    """Other networks of the script's own classes built on a path that runs, neither
    handed to the model (``Wrapper(encoder)``: counted in it) nor proven trained beside it
    (``partners``), where that cannot be read: one of the two is not bound to a name the
    optimizers could take (a GAN whose two nets are built by a framework's callbacks).
    Name -> parameters counted; the model's count is then not known to be the job's."""
    inside = {  # built in its argument lists, at any depth: a part of it
        id(n) for a in (*node.args, *(k.value for k in node.keywords)) for n in ast.walk(a)
    }
    passed = {
        a.id for a in (*node.args, *(k.value for k in node.keywords)) if isinstance(a, ast.Name)
    }
    found: dict[str, int] = {}
    mine = bound_module_name(node, values)
    for other, other_name, _, _, _, count in counted:
        if (
            other is node
            or other_name == name
            or other_name in partners
            or id(other) in inside
            or bound_module_name(other, values) in passed
            or (count.params == 0 and not count.unknown)
            or not values.paths.state(other).runs
            or _trains_on_its_own(other, node, values)
            or (bound_module_name(other, values) is not None and mine is not None)
        ):
            continue  # both bound to names: the optimizers decide (``_trained_together``)
        found.setdefault(other_name, count.params)
    return found


def _trains_on_its_own(other: ast.Call, model: ast.Call, values: Values) -> bool:
    """``other`` is built in another function that runs a training step of its own
    (``train_vae()`` beside ``train_autoencoder()``): another job, not a part of this one."""
    function = values.paths.enclosing_function(other)
    return (
        function is not None
        and function is not values.paths.enclosing_function(model)
        and any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "backward"
            for n in ast.walk(function)
        )
    )


def _trained_together(
    model: ast.Call, other: ast.Call, values: Values, reader: ReaderState
) -> bool:
    """Whether ``other`` builds a second model the default launch trains beside ``model``:
    both bound to names (``netG = Generator(...).to(device)``) whose parameters an optimizer
    of the script takes, neither the other, and the other's construction on a path that runs."""
    mine, theirs = bound_module_name(model, values), bound_module_name(other, values)
    return (
        mine is not None
        and theirs is not None
        and mine != theirs
        and {mine, theirs} <= reader.optimized
        and values.paths.state(other).runs
    )


_MOVES = ("to", "cuda", "float", "half", "bfloat16", "double", "train")


def bound_module_name(node: ast.Call, values: Values) -> str | None:
    """The name a module is bound to, through device moves (``Net().to(device)``)."""
    current: ast.AST = node
    parent = values.paths.parent(current)
    while (
        isinstance(parent, ast.Attribute)
        and parent.attr in _MOVES
        and isinstance(grand := values.paths.parent(parent), ast.Call)
        and grand.func is parent
    ):
        current, parent = grand, values.paths.parent(grand)
    if (
        isinstance(parent, ast.Assign)
        and parent.value is current
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return parent.targets[0].id
    return None


def _launch_globals(tree: ast.Module, values: Values, literal: dict[str, Any]) -> dict[str, Any]:
    """Module-level names bound once to what a plain launch computes (``nz = int(opt.nz)``
    from an argparse default, ``width = 2 * BASE``): the values a class body of the script
    reads as globals, folded by the launch engine (``literal`` already holds the literals).
    Only plain sizes (numbers, strings, booleans, tuples of them) and only names bound
    once, so no later rebinding can make the value a stale one."""
    bound: dict[str, list[ast.expr | None]] = {}  # None: bound to something else too
    stack: list[ast.AST] = list(tree.body)
    while stack:  # the module's statements, into its blocks, never into a def or a class
        stmt = stack.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.setdefault(stmt.name, []).append(None)
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                simple = isinstance(target, ast.Name)  # ``a, b = f()``: not each the whole
                for stored in ast.walk(target):
                    if isinstance(stored, ast.Name):
                        bound.setdefault(stored.id, []).append(stmt.value if simple else None)
            continue
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                bound.setdefault(child.id, []).append(None)  # a loop's, an augmented target
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.withitem, ast.expr)):
                stack.append(child)
    found: dict[str, Any] = {}
    for name, exprs in bound.items():
        if name in literal or len(exprs) != 1 or exprs[0] is None:
            continue
        value = values.get(exprs[0])
        if value is not None and _plain_size(value[0]):
            found[name] = value[0]
    return found


def _plain_size(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_plain_size(item) for item in value)
    return isinstance(value, (int, float, str, bool))


def _reads_any(node: ast.AST, names: dict[str, Any]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _arguments(
    node: ast.Call, values: Values, built: dict[str | int, Built]
) -> tuple[list[Any], dict[str, Any], str]:
    """A model call's arguments as the counter takes them, and the lowest confidence among
    them: followed values; a module the script built (bound to a name, or built right in
    the argument list), as that module."""
    confidence = "high"

    def given(expr: ast.expr) -> Any:
        nonlocal confidence
        if isinstance(expr, ast.Name) and expr.id in built:
            return built[expr.id]
        if isinstance(expr, ast.Call) and id(expr) in built:
            return built[id(expr)]
        found = values.get(expr)
        if found is None:  # ``c.d_model`` of the settings object the framework hands in
            setting = setting_read(expr, values.config_objects, values.paths)
            found = (setting, "medium") if setting is not None else None
        if found is not None and found[1] != "high":
            confidence = "medium"
        return UNTRACED if found is None else found[0]

    args = [given(arg) for arg in node.args]
    kwargs = {kw.arg: given(kw.value) for kw in node.keywords if kw.arg}
    return args, kwargs, confidence


def _bound_name(node: ast.Call, values: Values) -> str | None:
    """``encoder`` in ``encoder = Encoder(...)`` (the call is the whole assigned value)."""
    parent = values.paths.parent(node)
    if (
        isinstance(parent, ast.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return parent.targets[0].id
    return None


_STRUCTURE_KEYS = {
    "n_layer": ("n_layer", "n_layers", "num_layers", "depth", "num_hidden_layers"),
    "n_embd": ("n_embd", "emb_dim", "n_embed", "d_model", "hidden_size", "dim", "embed_dim"),
    "n_head": ("n_head", "n_heads", "num_heads", "num_attention_heads"),
    "vocab_size": ("vocab_size", "vocab", "n_vocab"),
    "n_positions": ("block_size", "context_length", "n_positions", "max_seq_len", "n_ctx"),
}


def _decoder_structure(
    call: ast.Call, values: Values, module: ast.Module | str, name: str
) -> dict | None:
    """A GPT-style decoder's shape from the config the model is built with.

    The model's class (and its file) must build token embeddings and attention (an
    ``nn.Embedding`` and ``scaled_dot_product_attention`` / ``softmax`` / ``MultiheadAttention``),
    and its config must name the layers, width, heads and vocabulary (``n_layer``,
    ``emb_dim``, ...). The cost model then treats it as a GPT-2-style decoder of that shape:
    learned positions, a 4x GELU MLP, LayerNorm — approximate for other variants.
    """
    if isinstance(module, str):  # a class imported from a file of the same folder
        try:
            text = dependencies.read_text(module, encoding="utf-8-sig")
        except (OSError, ValueError):
            return None
    else:  # the script itself: its text, not an unparse of its tree (a third of a read)
        text = values.source_text or ast.unparse(module)
    if not text or "Embedding" not in text:
        return None
    if not any(
        k in text for k in ("scaled_dot_product_attention", "softmax", "MultiheadAttention")
    ):
        return None
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        found = values.get(arg)
        if found is None or not isinstance(found[0], dict):
            continue
        config = found[0]
        shape: dict[str, Any] = {"model_type": "gpt2"}
        for key, names in _STRUCTURE_KEYS.items():
            value = next((config[n] for n in names if isinstance(config.get(n), int)), None)
            if value is not None and not isinstance(value, bool):
                shape[key] = value
        if all(k in shape for k in ("n_layer", "n_embd", "n_head", "vocab_size")):
            shape.setdefault("n_positions", 1024)
            shape["n_inner"] = 4 * shape["n_embd"]
            drop = next(
                (config[n] for n in ("dropout", "drop_rate", "resid_pdrop") if n in config), 0.0
            )
            shape["resid_pdrop"] = drop if isinstance(drop, (int, float)) else 0.0
            # the file's GELU: torch's fused op, or a Python composite with tanh (saves more)
            composite = "tanh(" in text and "class GELU" in text
            shape["activation_function"] = "gelu_new" if composite else "gelu_pytorch_tanh"
            return shape
    return None
