"""``[tool.torchward]`` of the nearest ``pyproject.toml``, validated into plain values.

Keys are kebab-case in TOML and snake_case here; the conversion happens in
:data:`SCHEMA` and nowhere else. A configuration that says something we do not
understand is an error naming the file and the key, never a silent default: a typo in
``ignore`` that quietly re-enabled a rule, or in ``fail-on`` that quietly let CI pass,
would cost more than the error.

The nearest file is found by walking up from the first checked path and taking the
first ``pyproject.toml`` that has a ``[tool.torchward]`` table (ruff's rule): a
``pyproject.toml`` without one is not ours and is not even parsed.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import attrs

from .discovery import DEFAULT_EXCLUDE
from .errors import ConfigError

SEVERITIES = ("error", "warning", "note", "hint")
#: what ``fail-on`` may name: every severity but ``hint``, which never fails a run
FAIL_ON = SEVERITIES[:-1]
_SELECTOR = re.compile(r"^(?:ALL|[A-Z]+[0-9]*)$")
_CODE = re.compile(r"^[A-Z]+[0-9]+$")


@attrs.frozen
class Config:
    """The validated table, with where it came from (``None``: built-in defaults)."""

    path: str | None = None
    root: str = "."  # directory that ``exclude`` and ``per-file-ignores`` patterns are relative to
    select: tuple[str, ...] = ("TW",)
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    fail_on: str = "error"
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    target_gpu: str | None = None  # the card TW010 and `torchward estimate` project onto
    estimate: tuple[tuple[str, Any], ...] = ()  # [tool.torchward.estimate]: RunConfig overrides
    models: tuple[tuple[str, str], ...] = ()  # user architectures: (name, JSON record)
    price_max_age_days: int = 180  # `torchward plan`: older prices are flagged stale
    prices: tuple[tuple[str, float, str | None], ...] = ()  # `torchward plan`: user prices
    # [tool.torchward.effects]: the project's additions to the library-effects table
    effects: Any = None  # torchward.analysis.effects.table.LibraryEffects | None

    def estimator_settings(self):
        """The estimator's view (``None`` when nothing is set): overrides and user models."""
        if not self.estimate and not self.models:
            return None
        from .estimator.settings import EstimatorSettings

        name = os.path.basename(self.path) if self.path else "pyproject.toml"
        return EstimatorSettings(self.estimate, self.models, f"{name} [tool.torchward.estimate]")


# codes that are not rules but can be selected: TW100 (unused suppression, reported by ``check``)
EXTRA_CODES = ("TW100",)


def known_codes() -> dict[str, str]:
    """Every selectable code → its name (the rule registry, looked up at call time)."""
    from .analysis import rule as rule_module

    codes = {rule.code: rule.name for rule in rule_module.all_rules()}
    codes.setdefault("TW100", "unused-suppression")
    return codes


def _unknown_selector(value: str, selector: str, codes: dict[str, str]) -> str:
    """The error for a selector that selects nothing, with the closest code."""
    by_name = {name: code for code, name in codes.items()}
    guess = by_name.get(value.strip().lower().replace("_", "-"))
    if guess is None:
        close = difflib.get_close_matches(selector, list(codes), n=1, cutoff=0.4)
        if not close:
            close = difflib.get_close_matches(value.strip().lower(), list(by_name), n=1)
            close = [by_name[close[0]]] if close else []
        guess = close[0] if close else None
    hint = f"did you mean {guess} ({codes[guess]})?" if guess else "no code is close"
    hint += f" (known codes: {', '.join(sorted(codes))}; `torchward rules` lists them)"
    if not _SELECTOR.match(selector):
        return f"'{value}' is not a rule code or prefix (like TW001 or TW): {hint}"
    return f"unknown rule code or prefix '{value}': {hint}"


def normalize_selectors(values: list[str]) -> tuple[str, ...]:
    """Upper-case rule selectors (codes, prefixes, ``ALL``); ``TG`` codes are ``TW`` aliases.

    A selector must select something: a known code or the prefix of one (``TW``,
    ``TW01``). An unknown one raises ``ValueError`` with the closest code, because a
    mistyped ``select = ["TW999"]`` would otherwise turn every rule off and report
    "No findings".
    """
    result = []
    codes: dict[str, str] | None = None
    for value in values:
        selector = value.strip().upper()
        if selector.startswith("TG"):
            selector = "TW" + selector[2:]
        if codes is None:
            codes = known_codes()
        if not _SELECTOR.match(selector) or (
            selector != "ALL" and not any(code.startswith(selector) for code in codes)
        ):
            raise ValueError(_unknown_selector(value, selector, codes))
        result.append(selector)
    return tuple(result)


def _string_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a list of strings")
    return value


def _selectors(value: Any) -> tuple[str, ...]:
    return normalize_selectors(_string_list(value))


def _patterns(value: Any) -> tuple[str, ...]:
    return tuple(_string_list(value))


def _per_file_ignores(value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ValueError("expected a table of glob = [codes]")
    return tuple((glob, _selectors(codes)) for glob, codes in value.items())


def _severity_overrides(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ValueError('expected a table of code = "error" | "warning" | "note" | "hint"')
    overrides = []
    for code, level in value.items():
        (normalized,) = normalize_selectors([code])
        if not _CODE.match(normalized):
            raise ValueError(f"'{code}' is not a full rule code (like TW001)")
        overrides.append((normalized, _severity(level)))
    return tuple(overrides)


def _gpu_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError('expected a GPU or instance name, like "a100-80gb" or "p4d.24xlarge"')
    return validate_gpu_name(value)


def validate_gpu_name(value: str) -> str:
    """``value`` stripped when the GPU / instance catalog knows it; else ``ValueError``
    with the closest names (an unknown GPU would silently switch TW010 off)."""
    from .estimator.hardware import lookup_hardware

    name = value.strip()
    try:
        lookup_hardware(name)
    except LookupError as error:  # UnknownNameError: says "did you mean ..." when it can
        hint = "" if "did you mean" in str(error) else " (`torchward gpus` lists the known names)"
        raise ValueError(f"{error}{hint}") from None
    return name


def _severity(value: Any) -> str:
    if value not in SEVERITIES:
        raise ValueError(f"expected one of {', '.join(SEVERITIES)}, got {value!r}")
    return value


def _fail_on(value: Any) -> str:
    if value not in FAIL_ON:
        raise ValueError(
            f"expected one of {', '.join(FAIL_ON)} (hints never fail a run), got {value!r}"
        )
    return value


def _estimate(value: Any) -> tuple[tuple[str, Any], ...]:
    from .estimator.settings import parse_estimate_table

    return parse_estimate_table(value)


def _models(value: Any) -> tuple[tuple[str, str], ...]:
    from .estimator.localmodels import parse_model_records

    return parse_model_records(value, "pyproject.toml [tool.torchward.models]")


def _models_file(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError('expected the path of a JSON file of architectures, like "models.json"')
    return value


def _max_age_days(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"expected a whole number of days, at least 1, got {value!r}")
    return value


def _prices(value: Any):
    from .estimator.planning.prices import parse_user_prices

    return parse_user_prices(value)


def _effects(value: Any):
    from .analysis.effects.table import EffectsError, parse_effects

    try:
        return parse_effects(value, "[tool.torchward.effects]")
    except EffectsError as error:
        raise ValueError(str(error)) from None


SCHEMA: dict[str, Callable[[Any], Any]] = {
    "select": _selectors,
    "ignore": _selectors,
    "per-file-ignores": _per_file_ignores,
    "severity": _severity_overrides,
    "fail-on": _fail_on,
    "exclude": _patterns,
    "extend-exclude": _patterns,
    "target-gpu": _gpu_name,
    "estimate": _estimate,
    "models": _models,
    "models-file": _models_file,
    "effects": _effects,
    "price-max-age-days": _max_age_days,
    "prices": _prices,
}


def _load_toml(path: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def parse_table(path: str, table: Any) -> Config:
    """Validate one ``[tool.torchward]`` table read from ``path``."""
    if not isinstance(table, dict):
        raise ConfigError(path, None, "expected a table")
    values: dict[str, Any] = {}
    for key, raw in table.items():
        convert = SCHEMA.get(key)
        if convert is None:
            close = difflib.get_close_matches(key.replace("_", "-"), SCHEMA, n=1)
            hint = (
                f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(SCHEMA)})"
            )
            raise ConfigError(path, key, "unknown key" + hint)
        try:
            values[key.replace("-", "_")] = convert(raw)
        except ValueError as error:
            raise ConfigError(path, getattr(error, "key", key), str(error)) from None
    root = os.path.dirname(os.path.abspath(path))
    models_file = values.pop("models_file", None)
    if models_file is not None:
        from .estimator.localmodels import read_models_file

        try:
            from_file = read_models_file(os.path.join(root, models_file))
        except ValueError as error:
            raise ConfigError(path, "models-file", str(error)) from None
        named = {name for name, _ in values.get("models", ())}  # the table's entries win
        values["models"] = values.get("models", ()) + tuple(
            m for m in from_file if m[0] not in named
        )
    return Config(path=path, root=root, **values)


def _read_document(path: str) -> dict:
    try:
        return _load_toml(path)
    except OSError as error:
        raise ConfigError(path, None, f"cannot read: {error.strerror or error}") from None
    except ValueError as error:  # tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(path, None, f"invalid TOML: {error}") from None


def _table(document: dict) -> Any:
    tool = document.get("tool", {})
    return tool.get("torchward") if isinstance(tool, dict) else None


def load_config(path: str) -> Config:
    """Read ``[tool.torchward]`` from the ``pyproject.toml`` at ``path`` (defaults when absent)."""
    table = _table(_read_document(path))
    if table is None:
        return Config(path=path, root=os.path.dirname(os.path.abspath(path)))
    return parse_table(path, table)


def _mentions_torchward(path: str) -> bool:
    """Cheap pre-check so that foreign ``pyproject.toml`` files are never parsed."""
    try:
        with open(path, "rb") as handle:
            return b"torchward" in handle.read()
    except OSError:
        return False


def find_config(start: str) -> Config | None:
    """The configuration of the nearest ``pyproject.toml`` at or above ``start`` that has one."""
    current = os.path.abspath(start)
    if not os.path.isdir(current):
        current = os.path.dirname(current)
    while True:
        candidate = os.path.join(current, "pyproject.toml")
        if os.path.isfile(candidate) and _mentions_torchward(candidate):
            table = _table(_read_document(candidate))
            if table is not None:
                return parse_table(candidate, table)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def resolve_config(explicit: str | None, first_path: str) -> Config:
    """The configuration for a run: ``--config`` when given, else the nearest one, else defaults."""
    if explicit is not None:
        if not os.path.isfile(explicit):
            raise ConfigError(explicit, None, "no such file")
        return load_config(explicit)
    found = find_config(first_path)
    return found if found is not None else Config(root=os.getcwd())
