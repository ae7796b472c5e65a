"""Workspace folders and the project configuration each document falls under.

Multi-root: each folder is tracked by URI; a document belongs to the folder whose path
is the longest prefix of its own (that folder's scoped editor settings apply). The
project configuration is the CLI's: the nearest ``pyproject.toml`` with a
``[tool.torchward]`` table at or above the document (:func:`torchward.config.find_config`),
merged with the editor's ``select`` / ``ignore`` / ``severity`` by the CLI's own policy
(:class:`torchward.selection.RuleSelection`), so the editor and ``torchward check`` agree.

Configurations are cached per directory and dropped when any ``pyproject.toml``
changes (``workspace/didChangeWatchedFiles``, or a save of one open in the editor). A
broken configuration is reported once per distinct message and the defaults are used.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

from torchward.config import Config, find_config
from torchward.errors import ConfigError

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import LintSettings
    from torchward.analysis.workspace import WorkspaceIndex

    from torchward.selection import RuleSelection

    from .server import TorchwardServer

from .configuration import ServerSettings
from .documents import path_of

PROJECT_FILE = "pyproject.toml"


class Workspace:
    def __init__(self) -> None:
        self.folders: dict[str, str] = {}  # uri -> absolute path
        self._configs: dict[str, tuple[Config, str | None]] = {}
        self._selections: dict[tuple, RuleSelection] = {}

    # -- folders -------------------------------------------------------------------
    def add_folder(self, uri: str) -> None:
        self.folders[uri] = os.path.abspath(path_of(uri))

    def remove_folder(self, uri: str) -> None:
        self.folders.pop(uri, None)

    def folder_for(self, path: str) -> str | None:
        """The URI of the innermost workspace folder containing ``path``."""
        best: tuple[int, str] | None = None
        absolute = os.path.abspath(path) if os.path.isabs(path) else path
        for uri, root in self.folders.items():
            if absolute == root or absolute.startswith(root.rstrip(os.sep) + os.sep):
                if best is None or len(root) > best[0]:
                    best = (len(root), uri)
        return best[1] if best else None

    # -- project configuration ----------------------------------------------------
    def invalidate(self) -> None:
        self._configs.clear()
        self._selections.clear()

    def project_config(self, path: str) -> tuple[Config, str | None]:
        """The configuration that governs ``path``, and the error that replaced it by defaults."""
        start: str | None
        if os.path.isabs(path):
            start = os.path.dirname(path)
        else:  # an untitled or remote document: the first folder, else nothing
            start = next(iter(self.folders.values()), None)
            if start is None:
                return Config(root=os.getcwd()), None
        cached = self._configs.get(start)
        if cached is None:
            try:
                found = find_config(start)
                cached = (
                    found if found is not None else Config(root=self.folder_root(path) or start),
                    None,
                )
            except ConfigError as error:
                cached = (Config(root=start), str(error))
            except Exception as error:  # an unreadable tree must not stop linting
                cached = (Config(root=start), f"cannot read the torchward configuration: {error}")
            self._configs[start] = cached
        return cached

    def folder_root(self, path: str) -> str | None:
        uri = self.folder_for(path)
        return self.folders.get(uri) if uri else None

    def lint_settings(self, path: str, editor: ServerSettings) -> tuple[LintSettings, str | None]:
        """The analysis settings for ``path``: project configuration merged with the editor's."""
        from torchward.analysis import Severity

        from torchward.selection import RuleSelection

        config, error = self.project_config(path)
        key = (config, editor.select, editor.ignore)
        selection = self._selections.get(key)
        if selection is None:
            selection = RuleSelection(config, select=editor.select, ignore=editor.ignore)
            self._selections[key] = selection
        settings = selection.settings_for(os.path.abspath(path) if os.path.isabs(path) else path)
        if editor.severity:
            overrides = dict(settings.severity)
            overrides.update((code, Severity(level)) for code, level in editor.severity)
            settings = attrs.evolve(settings, severity=tuple(sorted(overrides.items())))
        if editor.use_cache is not None:  # torchward.useCache, as `estimate --use-cache`
            from torchward.estimator.settings import with_editor_settings

            estimator = with_editor_settings(settings.estimator, use_cache=editor.use_cache)
            settings = attrs.evolve(settings, estimator=estimator)
        return settings, error


def is_project_file(uri: str) -> bool:
    return uri.rstrip("/").endswith("/" + PROJECT_FILE) or uri == PROJECT_FILE


# -- the cross-file index (issue 15) ---------------------------------------------------
# The analysis reads the project modules a document imports through the process's
# workspace index (:mod:`torchward.analysis.workspace`). The editor's unsaved text of an
# open document is what its importers must see, so every open document's text is put
# there as an overlay; and when a module's text changes (typed, saved, changed on disk,
# closed back to its disk text), the open documents whose last analysis read it —
# directly or through other modules — are analysed again, without being touched.


def module_index() -> WorkspaceIndex:  # loaded on first use, like the engine
    from torchward.analysis.workspace import WORKSPACE

    return WORKSPACE


def module_text_changed(server: TorchwardServer, path: str, text: str | None) -> None:
    """The text of the module at ``path`` is now ``text`` (None: the file on disk, for a
    closed document or an on-disk change): re-lint the open documents that read it."""
    if not os.path.isabs(path):
        return
    index = module_index()
    if text is None:
        index.clear_overlay(path)
    else:
        index.set_overlay(path, text)
    dependants = index.dependants(path)
    if not dependants:
        return
    for document in server.documents:
        if document.path != path and os.path.abspath(document.path) in dependants:
            server.schedule(document.uri)


def document_forgotten(path: str) -> None:
    """A closed document's analysis no longer reads anything (the import graph forgets it)."""
    if os.path.isabs(path):
        module_index().forget(path)
