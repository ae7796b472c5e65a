"""The library-effects table: what library calls do to a training step, read from data.

``timm``'s ``loss_scaler(loss, optimizer)`` runs backward and steps the optimizer;
``accelerator.backward(loss)`` runs backward and divides by the accumulation count; a
DeepSpeed engine's ``step()`` steps and zeroes. Those facts change with the libraries,
not with the engine, so they live in ``analysis/data/library_effects.toml`` (package
data), and a project adds its own from ``[tool.torchward.effects]`` (the same sections).
This module reads and validates the table into typed values; the adapters
(:mod:`.library`) turn its entries into the engine's events, and
:mod:`torchward.analysis.facts.catalog` asks it which constructors give which kind. Rules never
read it: they see events.

The active table is the built-in one, extended for the duration of one analysis by
:func:`using` (the engine enters it with the file's settings), so the catalog's callers
need no extra argument.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

import attrs

from ..facts.values import Kind

#: what one entry may do; each is one engine event (see :mod:`.library`)
EFFECTS = ("backward", "step", "scale", "unscale", "scaler_step", "clip")
RETURNS = (
    "unknown",
    "argument",
    "prepared",
    "prepared_first",
    "model",
    "tensor",
    "optimizer",
    "scheduler",
    "as_model",
)
#: receiver kinds whose methods the table describes
RECEIVERS = ("scaler", "accelerator", "engine", "lightning_module")
#: the kinds a constructor may give
CONSTRUCTED = {
    "scaler": Kind.SCALER,
    "accelerator": Kind.ACCELERATOR,
    "model": Kind.MODEL,
    "optimizer": Kind.OPTIMIZER,
}


@attrs.frozen
class Callbacks:
    """Objects a trainer calls back during its loop (a Hugging Face ``TrainerCallback``).

    ``per_step``: the methods it calls once per optimizer step, whose bodies therefore run
    inside the training loop (a host sync there waits every step); ``classes``: the bases
    (by qualified name) that make a class a callback; ``register``: the trainer methods
    and ``keywords`` the trainer's keywords that take callbacks, which make a class a
    callback by how it is used even without the base; ``model``: the keyword its hooks
    receive the trainer's model in."""

    classes: frozenset[str] = frozenset()
    per_step: frozenset[str] = frozenset()
    register: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()
    model: str | None = None

    def extended(self, other: Callbacks) -> Callbacks:
        return Callbacks(
            self.classes | other.classes,
            self.per_step | other.per_step,
            self.register | other.register,
            self.keywords | other.keywords,
            other.model or self.model,
        )

    def identity(self) -> tuple:
        return (
            sorted(self.classes),
            sorted(self.per_step),
            sorted(self.register),
            sorted(self.keywords),
            self.model,
        )


class EffectsError(ValueError):
    """The table (built-in or a project's) says something this module does not understand."""


@attrs.frozen
class FrameworkTraits:
    """What a framework does around the backward and step events tagged with its name.

    A rule asks the question it needs (does it zero? does it scale?) rather than "is this a
    framework", because the answers differ: ``accelerator.backward`` divides the loss by
    the accumulation count but never zeroes the gradients, a DeepSpeed engine does both.
    """

    zeroes_gradients: bool  # its step (or its loop) resets the gradients every update
    scales_accumulation: bool  # its backward divides the loss by the accumulation count


@attrs.frozen
class Effect:
    """One thing a call does, in order: ``backward`` of its argument, a ``step`` of the
    optimizer it is given (or of the receiver), a scaler's ``scale`` / ``unscale`` /
    ``scaler_step``, or a gradient ``clip``."""

    effect: str
    argument: int | None = None  # the positional argument it acts on (None: the receiver)
    keyword: str | None = None  # the same argument passed by keyword
    framework: str | None = None  # backward / step: whose semantics apply (None: torch's)
    only_with: str | None = None  # only when this keyword is passed, and not as None
    unless: str | None = None  # not when this keyword is passed as anything but True


@attrs.frozen
class MethodEffects:
    effects: tuple[Effect, ...] = ()
    returns: str = "unknown"


@attrs.frozen(eq=False)
class LibraryEffects:
    """The table: framework traits, constructors' kinds, model wrappers, trainer classes,
    methods' effects.

    Equal (and hashed) by content, so that a project configuration holding one can key a
    cache (the server keys its rule selections by configuration)."""

    frameworks: Mapping[str, FrameworkTraits] = attrs.field(factory=dict)
    constructors: Mapping[str, Kind] = attrs.field(factory=dict)  # qualified name -> kind
    optimizer_packages: tuple[str, ...] = ()
    model_wrappers: frozenset[str] = frozenset()
    trainer_classes: frozenset[str] = frozenset()
    trainer_packages: tuple[str, ...] = ()
    trainer_hooks: frozenset[str] = frozenset()  # methods a trainer calls once per batch
    model_base_packages: tuple[str, ...] = ()  # a class deriving from one of theirs is a model
    methods: Mapping[tuple[str, str], MethodEffects] = attrs.field(factory=dict)
    callbacks: Callbacks = attrs.field(factory=lambda: Callbacks())

    def method(self, receiver: str, name: str) -> MethodEffects | None:
        """What ``NAME(...)`` on a receiver of the table's kind ``receiver`` does."""
        return self.methods.get((receiver, name))

    def is_trainer(self, name: str | None) -> bool:
        """A class that runs the loop itself (a Hugging Face ``Trainer``, trl's trainers)."""
        if not name:
            return False
        package = name.partition(".")[0]
        return name in self.trainer_classes or (
            package in self.trainer_packages and name.endswith("Trainer")
        )

    def constructed_kind(self, name: str) -> Kind | None:
        """The kind of what a call to the canonical ``name`` builds, if the table says."""
        kind = self.constructors.get(name)
        if kind is not None:
            return kind
        package, _, last = name.rpartition(".")
        if (
            any(package == p or package.startswith(p + ".") for p in self.optimizer_packages)
            and last[:1].isupper()
            and last != "Optimizer"
        ):
            return Kind.OPTIMIZER
        return None

    def identity(self) -> str:
        """A stable text of everything here, for cache keys (the CLI's warm runs)."""
        return repr(
            (
                sorted(self.frameworks.items()),
                sorted((name, kind.value) for name, kind in self.constructors.items()),
                self.optimizer_packages,
                sorted(self.model_wrappers),
                sorted(self.trainer_classes),
                self.trainer_packages,
                sorted(self.trainer_hooks),
                self.model_base_packages,
                sorted(self.methods.items()),
                self.callbacks.identity(),
            )
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LibraryEffects) and self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash(self.identity())

    def extended(self, other: LibraryEffects) -> LibraryEffects:
        """This table with ``other``'s entries added (``other`` wins where both say)."""
        return LibraryEffects(
            frameworks={**self.frameworks, **other.frameworks},
            constructors={**self.constructors, **other.constructors},
            optimizer_packages=self.optimizer_packages + other.optimizer_packages,
            model_wrappers=self.model_wrappers | other.model_wrappers,
            trainer_classes=self.trainer_classes | other.trainer_classes,
            trainer_packages=self.trainer_packages + other.trainer_packages,
            trainer_hooks=self.trainer_hooks | other.trainer_hooks,
            model_base_packages=self.model_base_packages + other.model_base_packages,
            methods={**self.methods, **other.methods},
            callbacks=self.callbacks.extended(other.callbacks),
        )

    def hook_names(self) -> frozenset[str]:
        """Every method a library calls on a user's class during training (a trainer's
        ``compute_loss``, a callback's ``on_step_end``): the cheap relevance test of
        :mod:`torchward.analysis.facts.semantic` looks for their definitions."""
        return self.trainer_hooks | self.callbacks.per_step

    def backward_methods(self) -> frozenset[str]:
        """Methods whose entry runs backward (``manual_backward``, ``backward``); calling
        the object itself (``__call__``) is not a method."""
        return frozenset(
            name
            for (_, name), entry in self.methods.items()
            if name != "__call__" and any(effect.effect == "backward" for effect in entry.effects)
        )

    def model_unwrapping_methods(self) -> frozenset[str]:
        """Methods that hand back the model their first argument wraps
        (``accelerator.unwrap_model(model)``)."""
        return frozenset(
            name for (_, name), entry in self.methods.items() if entry.returns == "model"
        )

    def argument_returning_methods(self) -> frozenset[str]:
        """Methods that hand back their first argument (a scaler's ``scale``)."""
        return frozenset(
            name for (_, name), entry in self.methods.items() if entry.returns == "argument"
        )


_SECTIONS = ("frameworks", "constructors", "wrappers", "trainers", "methods", "callbacks", "models")
_CALLBACK_KEYS = ("classes", "per_step", "register", "keywords", "model")


def parse_effects(table: Any, where: str) -> LibraryEffects:
    """Validate one table (the built-in file's, or ``[tool.torchward.effects]``).

    Raises :class:`EffectsError` naming ``where`` and the key for anything unknown."""
    if not isinstance(table, dict):
        raise EffectsError(f"{where}: expected a table")
    for key in table:
        if key not in _SECTIONS:
            raise EffectsError(f"{where}: unknown section '{key}' (known: {', '.join(_SECTIONS)})")
    frameworks = {
        tag: _traits(value, f"{where} frameworks.{tag}")
        for tag, value in _mapping(table.get("frameworks", {}), f"{where} frameworks").items()
    }
    constructors: dict[str, Kind] = {}
    packages: tuple[str, ...] = ()
    for key, names in _mapping(table.get("constructors", {}), f"{where} constructors").items():
        listed = _names(names, f"{where} constructors.{key}")
        if key == "optimizer_packages":
            packages += tuple(listed)
            continue
        if key not in CONSTRUCTED:
            raise EffectsError(
                f"{where} constructors: unknown kind '{key}' "
                f"(known: {', '.join(CONSTRUCTED)}, optimizer_packages)"
            )
        constructors.update(dict.fromkeys(listed, CONSTRUCTED[key]))
    wrappers: set[str] = set()
    for key, names in _mapping(table.get("wrappers", {}), f"{where} wrappers").items():
        if key != "model":
            raise EffectsError(f"{where} wrappers: unknown kind '{key}' (known: model)")
        wrappers.update(_names(names, f"{where} wrappers.model"))
    trainers = _mapping(table.get("trainers", {}), f"{where} trainers")
    for key in trainers:
        if key not in ("classes", "packages", "hooks"):
            raise EffectsError(
                f"{where} trainers: unknown key '{key}' (known: classes, packages, hooks)"
            )
    trainer_classes = _names(trainers.get("classes", []), f"{where} trainers.classes")
    trainer_packages = _names(trainers.get("packages", []), f"{where} trainers.packages")
    trainer_hooks = _names(trainers.get("hooks", []), f"{where} trainers.hooks")
    models = _mapping(table.get("models", {}), f"{where} models")
    for key in models:
        if key != "base_packages":
            raise EffectsError(f"{where} models: unknown key '{key}' (known: base_packages)")
    model_base_packages = _names(models.get("base_packages", []), f"{where} models.base_packages")
    methods: dict[tuple[str, str], MethodEffects] = {}
    for receiver, entries in _mapping(table.get("methods", {}), f"{where} methods").items():
        if receiver not in RECEIVERS:
            raise EffectsError(
                f"{where} methods: unknown receiver '{receiver}' (known: {', '.join(RECEIVERS)})"
            )
        for name, entry in _mapping(entries, f"{where} methods.{receiver}").items():
            methods[(receiver, name)] = _method(entry, f"{where} methods.{receiver}.{name}")
    return LibraryEffects(
        frameworks=frameworks,
        constructors=constructors,
        optimizer_packages=packages,
        model_wrappers=frozenset(wrappers),
        trainer_classes=frozenset(trainer_classes),
        trainer_packages=tuple(trainer_packages),
        trainer_hooks=frozenset(trainer_hooks),
        model_base_packages=tuple(model_base_packages),
        methods=methods,
        callbacks=_callbacks(table.get("callbacks", {}), f"{where} callbacks"),
    )


def _callbacks(value: Any, where: str) -> Callbacks:
    fields = _mapping(value, where)
    for key in fields:
        if key not in _CALLBACK_KEYS:
            raise EffectsError(f"{where}: unknown key '{key}' (known: {', '.join(_CALLBACK_KEYS)})")
    model = fields.get("model")
    if model is not None and not (isinstance(model, str) and model.isidentifier()):
        raise EffectsError(f"{where}: 'model' must be a parameter name")
    classes, per_step, register, keywords = (
        frozenset(_names(fields.get(key, []), f"{where}.{key}")) for key in _CALLBACK_KEYS[:4]
    )
    return Callbacks(classes, per_step, register, keywords, model)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EffectsError(f"{where}: expected a table")
    return value


def _names(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise EffectsError(f"{where}: expected a list of qualified names")
    return value


def _traits(value: Any, where: str) -> FrameworkTraits:
    fields = _mapping(value, where)
    unknown = set(fields) - {"zeroes_gradients", "scales_accumulation"}
    if unknown:
        raise EffectsError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    for key in ("zeroes_gradients", "scales_accumulation"):
        if not isinstance(fields.get(key), bool):
            raise EffectsError(f"{where}: '{key}' must be true or false")
    return FrameworkTraits(fields["zeroes_gradients"], fields["scales_accumulation"])


def _method(value: Any, where: str) -> MethodEffects:
    fields = _mapping(value, where)
    unknown = set(fields) - {"effects", "returns"}
    if unknown:
        raise EffectsError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    returns = fields.get("returns", "unknown")
    if returns not in RETURNS:
        raise EffectsError(f"{where}: returns '{returns}' is not one of {', '.join(RETURNS)}")
    effects = fields.get("effects", [])
    if not isinstance(effects, list):
        raise EffectsError(f"{where}: 'effects' must be a list of tables")
    return MethodEffects(tuple(_effect(e, f"{where}.effects") for e in effects), returns)


def _effect(value: Any, where: str) -> Effect:
    fields = _mapping(value, where)
    known = {f.name for f in attrs.fields(Effect)}
    unknown = set(fields) - known
    if unknown:
        raise EffectsError(f"{where}: unknown key '{sorted(unknown)[0]}'")
    if fields.get("effect") not in EFFECTS:
        raise EffectsError(f"{where}: effect must be one of {', '.join(EFFECTS)}")
    argument = fields.get("argument")
    if argument is not None and (not isinstance(argument, int) or argument < 0):
        raise EffectsError(f"{where}: 'argument' must be a position (0, 1, ...)")
    for key in ("keyword", "framework", "only_with", "unless"):
        if key in fields and not isinstance(fields[key], str):
            raise EffectsError(f"{where}: '{key}' must be a string")
    return Effect(**fields)


@cache
def builtin() -> LibraryEffects:
    """The table shipped as package data."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    text = resources.files("torchward.analysis").joinpath("data/library_effects.toml").read_text()
    return parse_effects(tomllib.loads(text), "library_effects.toml")


_ACTIVE: contextvars.ContextVar[LibraryEffects | None] = contextvars.ContextVar(
    "torchward_library_effects", default=None
)


def current() -> LibraryEffects:
    """The table in force: the built-in one, extended by the analysis in progress."""
    return _ACTIVE.get() or builtin()


def token() -> int:
    """Which table is in force, for the keys of caches that outlive one analysis (the
    editor's function summaries): 0 for the built-in table, else a number the same
    extension keeps for as long as the process lives."""
    active = _ACTIVE.get()
    return 0 if active is None else id(active)


@functools.lru_cache(maxsize=16)
def _extended(extension: LibraryEffects) -> LibraryEffects:
    """The built-in table extended by ``extension``: one object per distinct extension
    (kept alive here, so :func:`token` never sees an id reused)."""
    return builtin().extended(extension)


@contextlib.contextmanager
def using(extension: LibraryEffects | None) -> Iterator[None]:
    """Analyse with ``extension`` added to the built-in table (None: the built-in alone)."""
    if extension is None:
        yield
        return
    token = _ACTIVE.set(_extended(extension))
    try:
        yield
    finally:
        _ACTIVE.reset(token)
