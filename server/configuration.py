"""The server's settings: typed, fully defaulted, camelCase on the wire.

One shape serves ``initializationOptions``, ``workspace/didChangeConfiguration`` and the
``torchward`` section of ``workspace/configuration``; :data:`WIRE_NAMES` is the only
place where the wire's camelCase meets Python's snake_case. Later sources override
earlier ones key by key: defaults, then initialization options, then the client's
global configuration, then the configuration scoped to the document's workspace folder.

An invalid value is reported (the caller shows it with ``window/showMessage``) and its
default is used; the other keys keep their values. Unknown keys are ignored: editors
put their own keys (``trace``, interpreter paths) into the same section.

``select`` / ``ignore`` / ``severity`` given here merge with the project's
``[tool.torchward]`` as the CLI's flags do (:mod:`torchward.selection`): ``select``
replaces, ``ignore`` adds, ``severity`` overrides per code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from torchward.config import SEVERITIES, normalize_selectors

DEFAULT_DEBOUNCE_MS = 150  # below a typing pause (~200-300 ms between bursts), above one keystroke
MAX_DEBOUNCE_MS = 10_000
SCAN_MODES = ("off", "index", "diagnostics")
# Above this many lines a document is analysed when opened and saved, not as you type
# (server/onsave.py): measured with bench/bench_lsp_size.py on a quiet 2-core machine, a
# keystroke re-lints 50,000 lines of training code in 0.6 s (median) and grows linearly,
# so about 80,000 lines would reach the 1 s budget; the default leaves a margin (a busy
# machine is slower: 20,000 lines took 4 s a keystroke at a load average of 14).
DEFAULT_LARGE_FILE_LINES = 60_000


@attrs.frozen
class ServerSettings:
    target_gpu: str | None = None
    """GPU the estimator checks the fit against (name or cloud instance type)."""
    select: tuple[str, ...] | None = None
    """Rule codes or prefixes to enable; None: the project's ``select``."""
    ignore: tuple[str, ...] = ()
    """Rule codes or prefixes to disable, on top of the project's ``ignore``."""
    severity: tuple[tuple[str, str], ...] = ()
    """Severity overrides per rule code."""
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    """Quiet time after the last edit before a document is analysed again; 0: at once."""
    estimator: bool = True
    """Whether to run the VRAM estimator (GPU fit, memory hover)."""
    inlay_hints: bool = True
    code_lens: bool = True
    workspace_scan: str = "off"
    """Background scan of the workspace folder (:mod:`.scan`): "off"; "index" (module names
    and top-level symbols of every file); "diagnostics" (also analyse every file and report
    its findings, open or not)."""
    large_file_lines: int = DEFAULT_LARGE_FILE_LINES
    """Documents with more lines are analysed when opened and saved, not on every edit
    (:mod:`.onsave`); 0: always as you type."""
    use_cache: bool | None = None
    """Whether the estimated forward keeps a KV cache (``--use-cache``); None ("auto"): the
    script's call, then the project's, then the model config's."""


def _selectors(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a list of rule codes or prefixes")
    return normalize_selectors(list(value))


def _severity(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ValueError(
            "expected an object of code: " + " | ".join(f'"{level}"' for level in SEVERITIES)
        )
    result = []
    for code, level in value.items():
        (normalized,) = normalize_selectors([str(code)])
        if level not in SEVERITIES:
            raise ValueError(f"{code}: expected one of {', '.join(SEVERITIES)}, got {level!r}")
        result.append((normalized, level))
    return tuple(result)


def _debounce(value: Any) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 <= value <= MAX_DEBOUNCE_MS
    ):
        raise ValueError(f"expected a number of milliseconds from 0 to {MAX_DEBOUNCE_MS}")
    return int(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _gpu(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError('expected a GPU name such as "A100 80GB" or an instance type')
    from torchward.config import validate_gpu_name

    return validate_gpu_name(value)  # an unknown name is a warning, not a silent TW010 off


def _auto_boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    answers: dict[Any, bool | None] = {"auto": None, "true": True, "false": False}
    if value not in answers:
        raise ValueError('expected "auto", true or false')
    return answers[value]


def _line_count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected a whole number of lines (0: always analyse as you type)")
    return value


def _scan_mode(value: Any) -> str:
    if value not in SCAN_MODES:
        raise ValueError(f"expected one of {', '.join(repr(mode) for mode in SCAN_MODES)}")
    return value


WIRE_NAMES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "targetGpu": ("target_gpu", _gpu),
    "select": ("select", _selectors),
    "ignore": ("ignore", _selectors),
    "severity": ("severity", _severity),
    "debounceMs": ("debounce_ms", _debounce),
    "estimator": ("estimator", _boolean),
    "inlayHints": ("inlay_hints", _boolean),
    "codeLens": ("code_lens", _boolean),
    "workspaceScan": ("workspace_scan", _scan_mode),
    "largeFileLines": ("large_file_lines", _line_count),
    "useCache": ("use_cache", _auto_boolean),
}


def merge_wire(*layers: Any) -> dict[str, Any]:
    """Overlay raw wire objects, later ones winning key by key (non-objects are skipped)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if isinstance(layer, dict):
            merged.update({key: value for key, value in layer.items() if value is not None})
    return merged


def settings_from_wire(raw: Any) -> tuple[ServerSettings, list[str]]:
    """Validate a wire object into settings; returns the settings and one error per bad key."""
    if raw is None:
        return ServerSettings(), []
    if not isinstance(raw, dict):
        return ServerSettings(), [f"torchward settings must be an object, got {type(raw).__name__}"]
    values: dict[str, Any] = {}
    errors: list[str] = []
    for key, value in raw.items():
        entry = WIRE_NAMES.get(key)
        if entry is None or value is None:
            continue
        name, convert = entry
        try:
            values[name] = convert(value)
        except (ValueError, TypeError) as error:
            errors.append(f"torchward setting '{key}': {error}; using the default")
    return ServerSettings(**values), errors


def settings_to_wire(settings: ServerSettings) -> dict[str, Any]:
    """The inverse of :func:`settings_from_wire` (for ``torchward/estimate`` replies and tests)."""
    result: dict[str, Any] = {}
    for wire, (name, _) in WIRE_NAMES.items():
        value = getattr(settings, name)
        if name == "severity":
            value = dict(value)
        elif name == "use_cache":
            value = {None: "auto", True: "true", False: "false"}[value]
        elif isinstance(value, tuple):
            value = list(value)
        result[wire] = value
    return result


def empty_list_as_object(value: Any) -> Any:
    """``[]`` read as ``{}``: Lua cannot tell an empty table's kind, and Neovim encodes
    ``init_options = {}`` or an all-commented ``settings.torchward = { ... }`` as ``[]``."""
    return {} if isinstance(value, list) and not value else value


def section_of(raw: Any) -> Any:
    """The ``torchward`` object inside a didChangeConfiguration payload, or the payload itself."""
    if isinstance(raw, dict) and isinstance(raw.get("torchward"), dict):
        return raw["torchward"]
    return raw
