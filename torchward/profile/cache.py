"""Measured profiles on disk, keyed by the model's source and the job (no torch here).

``torchward profile`` writes each result to ``.torchward_cache/profiles/<key>.json`` in
the project (the nearest folder upward with a ``pyproject.toml`` or ``.git``, else the
script's folder; ``$TORCHWARD_PROFILE_CACHE`` overrides). ``key`` hashes the model's
source (:func:`~.plan.model_source_digest`: the script or factory module, the sibling
modules it imports, the recipe) and the job (:meth:`~.request.ProfileJob.key`). Editing
the model's code changes the key, so a stale measurement is never shown;
``torchward estimate`` and the language server look the same key up and show the
measured numbers instead of the estimate. JSON, never pickle: the folder lives in the
user's tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .plan import model_source_digest
from .request import ModelRecipe, ProfileJob, ProfileResult

__all__ = ["cache_folder", "cache_key", "for_script", "lookup", "store"]

FORMAT = 1


def cache_folder(anchor: str | os.PathLike[str]) -> Path:
    override = os.environ.get("TORCHWARD_PROFILE_CACHE")
    if override:
        return Path(override)
    start = Path(anchor).resolve()
    if start.is_file() or not start.exists():
        start = start.parent
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder / ".torchward_cache" / "profiles"
    return start / ".torchward_cache" / "profiles"


def cache_key(recipe: ModelRecipe, job: ProfileJob, cwd: str = ".") -> str:
    text = f"{FORMAT}|{model_source_digest(recipe, cwd)}|{job.key()}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def lookup(
    recipe: ModelRecipe, job: ProfileJob, anchor: str | os.PathLike[str], cwd: str = "."
) -> ProfileResult | None:
    """The stored measurement of this model's source and job, or ``None``."""
    path = cache_folder(anchor) / f"{cache_key(recipe, job, cwd)}.json"
    try:
        data = json.loads(path.read_text("utf-8"))
        return ProfileResult.from_dict(data["result"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(
    recipe: ModelRecipe,
    job: ProfileJob,
    result: ProfileResult,
    anchor: str | os.PathLike[str],
    cwd: str = ".",
) -> Path | None:
    """Write ``result`` atomically; ``None`` when the folder is not writable (not an error)."""
    folder = cache_folder(anchor)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", "utf-8")
        path = folder / f"{cache_key(recipe, job, cwd)}.json"
        payload = {"format": FORMAT, "recipe": recipe.to_dict(), "result": result.to_dict()}
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=1)
        os.replace(tmp, path)
        return path
    except OSError:
        return None


def for_script(
    script: str, config: Any, gpu: Any = None, models: tuple = ()
) -> ProfileResult | None:
    """The stored measurement of the model and job ``torchward estimate SCRIPT`` describes.

    Used by ``estimate`` and the language server; never raises (no measurement → ``None``).
    """
    from .plan import PlanError, job_of, script_recipe

    try:
        with open(script, encoding="utf-8-sig") as handle:
            source = handle.read()
        recipe = script_recipe(script, source, config)
        job = job_of(config, gpu, models).job
    except (OSError, SyntaxError, ValueError, PlanError, LookupError):
        return None
    return lookup(recipe, job, script)
