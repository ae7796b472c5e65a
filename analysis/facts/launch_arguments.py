"""Command-line arguments as launch constants: an ``argparse`` parser and what it parses.

Step 2 of the fold (``docs/design/analysis.md``): in launch mode a parser is a constant
of the dataflow like any other — an :class:`ArgumentDefaults` (flag → the default a plain
launch gets) built by ``ArgumentParser()`` and grown by each ``add_argument`` the flow
reaches, and ``parse_args()`` turns it into an :class:`Namespace` whose attributes
are the defaults (``args.batch_size``). Being constants, they follow assignments, returns
(``args = get_args()``) and parameters (``train(args)``) with their path conditions, and
join like every other fact (two parsers built on different paths: undecided).

argparse's own rules, as a plain ``python SCRIPT`` launch meets them: the destination is
``dest=`` or the first long option with ``-`` as ``_``; an absent default is None, False
for ``store_true`` and True for ``store_false``; a string default passes through ``type``
(``type=int, default="8"`` gives 8); a required option has no value a plain launch runs
with (undecided).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Hashable

import attrs

from .constants import is_items

__all__ = ["ArgumentDefaults", "DataclassParser", "Namespace", "declare", "parser_call"]

_UNSET = object()


@attrs.frozen
class ArgumentDefaults:
    """A parser: each destination with its default, in declaration order. ``preset``: the
    destinations ``set_defaults`` gave a value before any ``add_argument`` declared them."""

    defaults: tuple[tuple[str, Hashable], ...] = ()
    preset: frozenset[str] = frozenset()

    def with_flag(self, dest: str, default: Hashable, explicit: bool = True) -> ArgumentDefaults:
        """``add_argument`` of ``dest``; ``explicit``: its call writes ``default=``
        (argparse: an explicit default replaces an earlier ``set_defaults`` value, an
        absent one takes it)."""
        if dest in self.preset:
            kept = tuple(
                (name, default if name == dest and explicit else value)
                for name, value in self.defaults
            )
            return ArgumentDefaults(kept, self.preset - {dest})
        if any(name == dest for name, _ in self.defaults):
            return self  # argparse keeps the first declaration's default
        return ArgumentDefaults((*self.defaults, (dest, default)), self.preset)

    def with_defaults(self, updates: dict[str, Hashable]) -> ArgumentDefaults:
        """``set_defaults(**updates)``: replaces declared defaults, adds the others (which
        an ``add_argument`` with its own default may replace later)."""
        declared = {name for name, _ in self.defaults}
        kept = tuple((name, updates.pop(name, value)) for name, value in self.defaults)
        return ArgumentDefaults(
            (*kept, *updates.items()), self.preset | (updates.keys() - declared)
        )

    def undecided(self, undecided: Hashable) -> ArgumentDefaults:
        """After ``set_defaults(**mapping)`` with a mapping nobody can read: any default
        may have been replaced."""
        return ArgumentDefaults(tuple((name, undecided) for name, _ in self.defaults), self.preset)


@attrs.frozen
class Namespace:
    """An object whose attributes a plain launch knows: what ``parse_args()`` returns (the
    defaults), an instance of a config dataclass the script defines (its fields)."""

    values: tuple[tuple[str, Hashable], ...] = ()
    # by name, the first of each (a parser's hundred flags, read at every ``args.x``: a
    # scan of the pairs was a fifteenth of launch mode)
    _by_name: dict[str, Hashable] = attrs.field(init=False, eq=False, repr=False)

    @_by_name.default
    def _index(self) -> dict[str, Hashable]:
        by_name: dict[str, Hashable] = {}
        for key, value in self.values:
            by_name.setdefault(key, value)
        return by_name

    def get(self, name: str, missing: Hashable) -> Hashable:
        return self._by_name.get(name, missing)


@attrs.frozen
class DataclassParser:
    """``HfArgumentParser((ModelArguments, TrainingArguments))``: the dataclasses it fills,
    by the names the script gives them."""

    classes: tuple[str, ...] = ()


def parser_call(method: str, receiver: Hashable) -> Hashable | None:
    """The constant ``receiver.method()`` gives without arguments that matter: the parsed
    values of a parser (``parse_args``; ``parse_known_args`` also returns the leftovers)."""
    if not isinstance(receiver, ArgumentDefaults):
        return None
    values = Namespace(receiver.defaults)
    if method == "parse_args":
        return values
    if method == "parse_known_args":
        return (values, ())
    return None


def declare(
    receiver: ArgumentDefaults,
    node: ast.Call,
    fold: Callable[[ast.expr], Hashable],
    undecided: Hashable,
) -> ArgumentDefaults:
    """``receiver`` after ``add_argument`` / ``set_defaults`` call ``node`` (``fold``:
    the launch constant of an argument expression)."""
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    if method == "set_defaults":
        updates: dict[str, Hashable] = {}
        for keyword in node.keywords:
            if keyword.arg is not None:
                updates[keyword.arg] = fold(keyword.value)
                continue
            mapping = fold(keyword.value)  # ``set_defaults(**vars(config))``
            if not is_items(mapping):
                return receiver.with_defaults(updates).undecided(undecided)
            updates.update((k, v) for k, v in mapping if isinstance(k, str))
        return receiver.with_defaults(updates)
    dest = _destination(node, keywords, fold)
    if dest is None:
        return receiver
    if "required" in keywords and fold(keywords["required"]) is True:
        return receiver.with_flag(dest, undecided)
    action = fold(keywords["action"]) if "action" in keywords else None
    if "default" not in keywords:
        absent = (
            {"store_true": False, "store_false": True}.get(action)
            if isinstance(action, str)
            else None
        )
        return receiver.with_flag(dest, absent, explicit=False)
    default = fold(keywords["default"])
    if isinstance(default, str) and "type" in keywords:
        default = _converted(default, keywords["type"], undecided)
    return receiver.with_flag(dest, default)


def _destination(
    node: ast.Call, keywords: dict[str, ast.expr], fold: Callable[[ast.expr], Hashable]
) -> str | None:
    if "dest" in keywords:
        dest = fold(keywords["dest"])
        return dest if isinstance(dest, str) else None
    names = [name for name in (fold(a) for a in node.args) if isinstance(name, str)]
    if not names or len(names) != len(node.args):
        return None
    chosen = next((n for n in names if n.startswith("--")), names[0])
    return chosen.lstrip("-").replace("-", "_")


def _converted(default: str, converter: ast.expr, undecided: Hashable) -> Hashable:
    """A string default through ``type=int`` / ``type=float`` (argparse converts string
    defaults); any other ``type`` leaves it undecided."""
    name = converter.id if isinstance(converter, ast.Name) else None
    function = {"int": int, "float": float, "str": str}.get(name or "")
    if function is None:
        return undecided
    try:
        return function(default)
    except ValueError:
        return undecided
