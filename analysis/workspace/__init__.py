"""Stage workspace: receives many files and produces what crosses them: the lazy index of
module summaries, calls into other modules analysed in the caller's context, and the
findings inside another module that a call reveals, reported at that call.

Cross-file analysis: the project's modules as one program (issue 15).

- :mod:`.resolve` — which file an import names (relative, beside the script, package
  root, project root and ``src/``), never importing user code;
- :mod:`.summary` — what a module offers its importers, from its text alone;
- :mod:`.index` — summaries by content hash, editor overlays, the import graph;
- :mod:`.linking` — the engine's hook: calls into other modules analysed in the caller's
  context, their summaries replayed at the call site.
"""

from __future__ import annotations

from .index import WORKSPACE, WorkspaceIndex
from .resolve import resolve_module
from .summary import ModuleSummary

__all__ = ["WORKSPACE", "ModuleSummary", "WorkspaceIndex", "resolve_module"]
