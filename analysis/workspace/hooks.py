"""The two calls the dataflow makes into the workspace, kept out of the engine's modules.

:mod:`torchward.analysis.facts.calls` asks here first whether a call goes to another project
module (:meth:`.linking.ProjectLinker.call`) and, for a method whose class the file does
not define, whether another module defines it (:meth:`.linking.ProjectLinker.method`).
Both answer None when the file links no project (a document without a path) or the
callee is not the project's, and the dataflow resolves the call as before.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..facts.values import Value

if TYPE_CHECKING:
    from ..facts.interpreter import FunctionRun


def linked_call(run: FunctionRun, node: ast.Call) -> Value | None:
    """``run``: the calling :class:`~torchward.analysis.facts.interpreter.FunctionRun`."""
    project = run.analyzer.project
    return project.call(run, node) if project is not None else None


def linked_method(
    run: FunctionRun, receiver: Value, method: str, node: ast.Call, receiver_path: str | None
) -> Value | None:
    project = run.analyzer.project
    if project is None or not receiver.class_name:
        return None
    return project.method(run, receiver, method, node, receiver_path)
